-- _feed_endpoints: the endpoints an arm walks, one at a time: the human's own and their teams'
--   (switchboard/scope.py, @{human_endpoints}: the memberships read once, an InitPlan, then the
--   endpoints by their owner_id and team_id indexes ORed in a bitmap, or a scan of a small
--   endpoints table), cut to the one the endpoint filter names. @{endpoint_filter} is a fixed
--   fragment.
(SELECT e.id, e.slug FROM endpoints e WHERE @{human_endpoints} @{endpoint_filter}) e
