CREATE TABLE `accelerator_requests` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`uuid` text NOT NULL,
	`state` text NOT NULL,
	`device_profile_id` integer,
	`device_profile_name` text NOT NULL,
	`device_profile_group_id` integer NOT NULL,
	`device_profile_group` text NOT NULL,
	`project_id` text,
	`hostname` text,
	`device_rp_uuid` text,
	`instance_uuid` text,
	`deployable_id` integer,
	`attach_handle_id` integer,
	`bind_started_at` text,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')) NOT NULL,
	`updated_at` text
);
--> statement-breakpoint
CREATE UNIQUE INDEX `uniq_accelerator_requests0uuid` ON `accelerator_requests` (`uuid`);--> statement-breakpoint
CREATE INDEX `accelerator_requests_instance_uuid_idx` ON `accelerator_requests` (`instance_uuid`);--> statement-breakpoint
CREATE INDEX `accelerator_requests_state_idx` ON `accelerator_requests` (`state`);--> statement-breakpoint
CREATE TABLE `attach_handles` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`uuid` text NOT NULL,
	`deployable_id` integer NOT NULL,
	`attach_type` text NOT NULL,
	`attach_info` text NOT NULL,
	`arq_id` integer,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')) NOT NULL,
	`updated_at` text
);
--> statement-breakpoint
CREATE UNIQUE INDEX `uniq_attach_handles0uuid` ON `attach_handles` (`uuid`);--> statement-breakpoint
CREATE UNIQUE INDEX `uniq_attach_handles0arq_id` ON `attach_handles` (`arq_id`);--> statement-breakpoint
CREATE INDEX `attach_handles_deployable_id_idx` ON `attach_handles` (`deployable_id`);--> statement-breakpoint
CREATE TABLE `deployables` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`uuid` text NOT NULL,
	`device_id` integer NOT NULL,
	`name` text NOT NULL,
	`num_accelerators` integer NOT NULL,
	`rp_uuid` text,
	`driver_name` text,
	`bitstream_id` text,
	`function_id` text,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')) NOT NULL,
	`updated_at` text
);
--> statement-breakpoint
CREATE UNIQUE INDEX `uniq_deployables0uuid` ON `deployables` (`uuid`);--> statement-breakpoint
CREATE INDEX `deployables_device_id_idx` ON `deployables` (`device_id`);--> statement-breakpoint
CREATE INDEX `deployables_rp_uuid_idx` ON `deployables` (`rp_uuid`);--> statement-breakpoint
CREATE TABLE `device_profiles` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`uuid` text NOT NULL,
	`name` text NOT NULL,
	`description` text,
	`groups` text NOT NULL,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')) NOT NULL,
	`updated_at` text
);
--> statement-breakpoint
CREATE UNIQUE INDEX `uniq_device_profiles0uuid` ON `device_profiles` (`uuid`);--> statement-breakpoint
CREATE UNIQUE INDEX `uniq_device_profiles0name` ON `device_profiles` (`name`);--> statement-breakpoint
CREATE TABLE `devices` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`uuid` text NOT NULL,
	`hostname` text NOT NULL,
	`host_key` text NOT NULL,
	`type` text NOT NULL,
	`vendor` text NOT NULL,
	`model` text NOT NULL,
	`std_board_info` text,
	`vendor_board_info` text,
	`status` text DEFAULT 'enabled' NOT NULL,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')) NOT NULL,
	`updated_at` text
);
--> statement-breakpoint
CREATE UNIQUE INDEX `uniq_devices0uuid` ON `devices` (`uuid`);--> statement-breakpoint
CREATE UNIQUE INDEX `uniq_devices0hostname0host_key` ON `devices` (`hostname`,`host_key`);--> statement-breakpoint
CREATE TABLE `cyborg_outbox` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`topic` text NOT NULL,
	`payload` text NOT NULL,
	`state` text DEFAULT 'pending' NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`next_attempt_at` integer NOT NULL,
	`last_error` text,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')) NOT NULL,
	`updated_at` text
);
--> statement-breakpoint
CREATE INDEX `cyborg_outbox_due_idx` ON `cyborg_outbox` (`state`,`next_attempt_at`);