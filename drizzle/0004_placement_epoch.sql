CREATE TABLE `placement_epoch` (
	`id` integer PRIMARY KEY NOT NULL,
	`token` text NOT NULL
);

--> statement-breakpoint
INSERT INTO `placement_epoch` (`id`, `token`) VALUES (1, lower(hex(randomblob(8))));
