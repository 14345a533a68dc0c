CREATE TABLE `ext_leases` (
	`consumer_uuid` text PRIMARY KEY NOT NULL,
	`consumer_generation` integer NOT NULL,
	`seconds` integer NOT NULL,
	`expires_at_ms` integer NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `ext_leases_expires_at_ms_idx` ON `ext_leases` (`expires_at_ms`);--> statement-breakpoint
CREATE TABLE `ext_provider_taints` (
	`resource_provider_id` integer NOT NULL,
	`key` text NOT NULL,
	`value` text DEFAULT '' NOT NULL,
	`effect` text NOT NULL,
	`reason` text DEFAULT '' NOT NULL,
	`created_at` text NOT NULL,
	PRIMARY KEY(`resource_provider_id`, `key`, `effect`)
);
--> statement-breakpoint
CREATE TABLE `ext_sweep_stats` (
	`name` text PRIMARY KEY NOT NULL,
	`runs` integer DEFAULT 0 NOT NULL,
	`released` integer DEFAULT 0 NOT NULL,
	`dropped` integer DEFAULT 0 NOT NULL,
	`binding_failures` integer DEFAULT 0 NOT NULL,
	`last_run_at` text
);
--> statement-breakpoint
-- A provider's taints go with it; a consumer's lease goes with the consumer (DELETE /allocations, an empty PUT).
CREATE TRIGGER `ext_taints_provider_delete` AFTER DELETE ON `resource_providers` BEGIN
  DELETE FROM ext_provider_taints WHERE resource_provider_id = OLD.id;
END;
--> statement-breakpoint
CREATE TRIGGER `ext_leases_consumer_delete` AFTER DELETE ON `consumers` BEGIN
  DELETE FROM ext_leases WHERE consumer_uuid = OLD.uuid;
END;
--> statement-breakpoint
-- The binding condition (KEP-5007): an ARQ of a leased consumer that fails to bind (the bind job, or the
-- binding timeout) releases the lease at once, in the same transaction: the consumer's allocations are
-- removed as DELETE /allocations/{consumer} removes them, unless the consumer was written after the lease
-- was set (its generation moved): then only the lease goes.
CREATE TRIGGER `ext_leases_binding_failed` AFTER UPDATE OF state ON `accelerator_requests`
WHEN NEW.state = 'BindFailed' AND OLD.state <> 'BindFailed' AND NEW.instance_uuid IS NOT NULL
  AND EXISTS (SELECT 1 FROM ext_leases WHERE consumer_uuid = NEW.instance_uuid) BEGIN
  INSERT INTO ext_sweep_stats (name, binding_failures) VALUES ('leases', 1)
    ON CONFLICT (name) DO UPDATE SET binding_failures = binding_failures + 1;
  DELETE FROM allocations WHERE consumer_id = NEW.instance_uuid AND EXISTS (
    SELECT 1 FROM ext_leases l JOIN consumers c ON c.uuid = l.consumer_uuid
    WHERE l.consumer_uuid = NEW.instance_uuid AND c.generation = l.consumer_generation);
  DELETE FROM consumers WHERE uuid = NEW.instance_uuid AND generation = (
    SELECT consumer_generation FROM ext_leases WHERE consumer_uuid = NEW.instance_uuid);
  DELETE FROM ext_leases WHERE consumer_uuid = NEW.instance_uuid;
END;
