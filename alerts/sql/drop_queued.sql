-- drop_queued: fail the messages still queued for channel `channel_id`, which was just
--   disabled (alerts/channels.py): a channel switched off is sent nothing more, and a message
--   held until it is switched on again would arrive stale. A sender that took one of them
--   already records its try against no row (record_delivery.sql matches queued rows only).
-- params: channel_id
-- returns: id per message failed.
-- Uses index: alert_deliveries_channel_idx (channel_id, id DESC).
UPDATE alert_deliveries d
   SET state = 'failed', error = 'the channel was disabled', finished_at = now()
 WHERE d.channel_id = %(channel_id)s AND d.state = 'queued'
RETURNING d.id
