-- refusals: count one request's refused spans in its endpoint's row for this minute, and drop
--   the endpoint's rows older than two days (the fleet reads one day), in one statement.
-- params: endpoint_id, unbound, over_cap, invalid (each >= 0, their sum > 0).
-- Uses index: span_refusals_pkey (endpoint_id, minute), for the upsert and the pruned range.
WITH pruned AS (
    DELETE FROM span_refusals
     WHERE endpoint_id = %(endpoint_id)s AND minute < now() - interval '2 days'
)
INSERT INTO span_refusals AS r (endpoint_id, minute, unbound, over_cap, invalid)
VALUES (%(endpoint_id)s, date_trunc('minute', now()), %(unbound)s, %(over_cap)s, %(invalid)s)
ON CONFLICT (endpoint_id, minute) DO UPDATE
   SET unbound = r.unbound + excluded.unbound,
       over_cap = r.over_cap + excluded.over_cap,
       invalid = r.invalid + excluded.invalid
