CREATE TABLE `placement_usage_changes` (
	`provider_id` integer PRIMARY KEY NOT NULL,
	`seq` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `placement_usage_changes_seq_idx` ON `placement_usage_changes` (`seq`);--> statement-breakpoint
-- Every write to a provider's allocations marks the provider (see src/placement/candidates/index.ts, kept answers).
CREATE TRIGGER `usage_change_allocation_insert` AFTER INSERT ON `allocations` BEGIN
  INSERT INTO placement_usage_changes (provider_id, seq) VALUES (NEW.resource_provider_id, (SELECT COALESCE(MAX(seq), 0) + 1 FROM placement_usage_changes)) ON CONFLICT (provider_id) DO UPDATE SET seq = excluded.seq;
END;
--> statement-breakpoint
CREATE TRIGGER `usage_change_allocation_update` AFTER UPDATE OF resource_provider_id, resource_class_id, used ON `allocations` BEGIN
  INSERT INTO placement_usage_changes (provider_id, seq) VALUES (OLD.resource_provider_id, (SELECT COALESCE(MAX(seq), 0) + 1 FROM placement_usage_changes)) ON CONFLICT (provider_id) DO UPDATE SET seq = excluded.seq;
  INSERT INTO placement_usage_changes (provider_id, seq) VALUES (NEW.resource_provider_id, (SELECT COALESCE(MAX(seq), 0) + 1 FROM placement_usage_changes)) ON CONFLICT (provider_id) DO UPDATE SET seq = excluded.seq;
END;
--> statement-breakpoint
CREATE TRIGGER `usage_change_allocation_delete` AFTER DELETE ON `allocations` BEGIN
  INSERT INTO placement_usage_changes (provider_id, seq) VALUES (OLD.resource_provider_id, (SELECT COALESCE(MAX(seq), 0) + 1 FROM placement_usage_changes)) ON CONFLICT (provider_id) DO UPDATE SET seq = excluded.seq;
END;
