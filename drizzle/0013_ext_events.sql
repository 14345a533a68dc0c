CREATE TABLE `ext_events` (
	`seq` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`kind` text NOT NULL,
	`at_ms` integer NOT NULL,
	`body` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `ext_events_at_ms_idx` ON `ext_events` (`at_ms`);--> statement-breakpoint
CREATE INDEX `ext_preemptions_hold_idx` ON `ext_preemptions` (`hold_id`);--> statement-breakpoint
-- Preemption's events (docs/preemption.md), written by trigger in the transaction of the write they report,
-- whoever makes it (Nova's DELETE /allocations, the lease sweep, a claim with ext_hold, the hold sweep):
-- never lost, never reported for a write that did not commit. `preemption.created` is written by
-- POST /ext/preemptions in its own batch (src/ext/preemption/preemptions.ts). The time is the database's.
CREATE TRIGGER `ext_events_preemption_victim_released` AFTER DELETE ON `consumers`
WHEN EXISTS (SELECT 1 FROM ext_preemption_victims WHERE consumer_uuid = OLD.uuid) BEGIN
  INSERT INTO ext_events (kind, at_ms, body)
    SELECT 'preemption.victim_released', CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER),
      json_object('preemption_id', v.preemption_id, 'consumer_uuid', v.consumer_uuid)
    FROM ext_preemption_victims v WHERE v.consumer_uuid = OLD.uuid;
END;
--> statement-breakpoint
CREATE TRIGGER `ext_events_preemption_nomination_drawn` AFTER INSERT ON `ext_hold_draws`
WHEN EXISTS (SELECT 1 FROM ext_preemptions WHERE hold_id = NEW.hold_uuid) BEGIN
  INSERT INTO ext_events (kind, at_ms, body)
    SELECT 'preemption.nomination_drawn', CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER),
      json_object('preemption_id', p.id, 'hold_uuid', NEW.hold_uuid, 'consumer_uuid', NEW.consumer_uuid)
    FROM ext_preemptions p WHERE p.hold_id = NEW.hold_uuid;
END;
--> statement-breakpoint
CREATE TRIGGER `ext_events_preemption_nomination_redrawn` AFTER UPDATE OF hold_uuid ON `ext_hold_draws`
WHEN NEW.hold_uuid IS NOT OLD.hold_uuid AND EXISTS (SELECT 1 FROM ext_preemptions WHERE hold_id = NEW.hold_uuid) BEGIN
  INSERT INTO ext_events (kind, at_ms, body)
    SELECT 'preemption.nomination_drawn', CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER),
      json_object('preemption_id', p.id, 'hold_uuid', NEW.hold_uuid, 'consumer_uuid', NEW.consumer_uuid)
    FROM ext_preemptions p WHERE p.hold_id = NEW.hold_uuid;
END;
--> statement-breakpoint
-- BEFORE: the hold's draws are still there (ext_holds_delete removes them after). A nomination that ends
-- with nothing drawn from it lapsed (its window over, or the operator released it: DELETE /ext/holds/{uuid}).
CREATE TRIGGER `ext_events_preemption_nomination_lapsed` BEFORE DELETE ON `ext_holds`
WHEN EXISTS (SELECT 1 FROM ext_preemptions WHERE hold_id = OLD.uuid)
  AND NOT EXISTS (SELECT 1 FROM ext_hold_draws WHERE hold_uuid = OLD.uuid) BEGIN
  INSERT INTO ext_events (kind, at_ms, body)
    SELECT 'preemption.nomination_lapsed', CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER),
      json_object('preemption_id', p.id, 'hold_uuid', OLD.uuid)
    FROM ext_preemptions p WHERE p.hold_id = OLD.uuid;
END;
