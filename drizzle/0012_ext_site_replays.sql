CREATE TABLE `ext_site_replays` (
	`site` text NOT NULL,
	`seq` integer NOT NULL,
	`idem_key` text NOT NULL,
	`applied_at` text NOT NULL,
	PRIMARY KEY(`site`, `seq`)
);
