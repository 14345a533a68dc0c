-- What a request's names resolve to stands while no tree changes (src/placement/candidates/cloud-model.ts
-- lookupsStatement): classes and traits renamed or removed, and providers written, already mark one (0003).
-- An aggregate removed or given another uuid marks every tree too; one created unused changes no answer.
CREATE TRIGGER `tree_change_aggregate_update` AFTER UPDATE OF id, uuid ON `placement_aggregates` BEGIN
  INSERT INTO placement_tree_changes (root_id, seq) VALUES (0, (SELECT COALESCE(MAX(seq), 0) + 1 FROM placement_tree_changes)) ON CONFLICT (root_id) DO UPDATE SET seq = excluded.seq;
END;
--> statement-breakpoint
CREATE TRIGGER `tree_change_aggregate_delete` AFTER DELETE ON `placement_aggregates` BEGIN
  INSERT INTO placement_tree_changes (root_id, seq) VALUES (0, (SELECT COALESCE(MAX(seq), 0) + 1 FROM placement_tree_changes)) ON CONFLICT (root_id) DO UPDATE SET seq = excluded.seq;
END;
