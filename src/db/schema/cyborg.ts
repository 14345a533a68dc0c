// Cyborg (accelerator) tables: device profiles, devices, deployables, attach
// handles, accelerator requests, and the outbox that carries bind work and
// Nova events past the commit. Owned by the accelerator issue.
import { sql } from 'drizzle-orm';
import { index, integer, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core';

const timestamps = {
  createdAt: text('created_at').notNull().default(sql`(strftime('%Y-%m-%dT%H:%M:%fZ','now'))`),
  updatedAt: text('updated_at'),
};

/** A named list of groups; each group is a flat string map (resources:/trait:/accel:). */
export const deviceProfiles = sqliteTable(
  'device_profiles',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    uuid: text('uuid').notNull(),
    name: text('name').notNull(),
    description: text('description'),
    /** JSON array of Record<string, string>. */
    groups: text('groups').notNull(),
    ...timestamps,
  },
  (t) => [uniqueIndex('uniq_device_profiles0uuid').on(t.uuid), uniqueIndex('uniq_device_profiles0name').on(t.name)],
);

/** A physical accelerator as a host agent reports it. */
export const devices = sqliteTable(
  'devices',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    uuid: text('uuid').notNull(),
    hostname: text('hostname').notNull(),
    /** Agent-chosen stable key within the host (e.g. the PCI address of the card). */
    hostKey: text('host_key').notNull(),
    type: text('type').notNull(),
    vendor: text('vendor').notNull(),
    model: text('model').notNull(),
    stdBoardInfo: text('std_board_info'),
    vendorBoardInfo: text('vendor_board_info'),
    status: text('status').notNull().default('enabled'),
    ...timestamps,
  },
  (t) => [uniqueIndex('uniq_devices0uuid').on(t.uuid), uniqueIndex('uniq_devices0hostname0host_key').on(t.hostname, t.hostKey)],
);

/** The unit Placement sees as a device resource provider (rp_uuid). */
export const deployables = sqliteTable(
  'deployables',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    uuid: text('uuid').notNull(),
    deviceId: integer('device_id').notNull(),
    name: text('name').notNull(),
    numAccelerators: integer('num_accelerators').notNull(),
    rpUuid: text('rp_uuid'),
    driverName: text('driver_name'),
    /** What the host agent last reported as programmed (FPGA). */
    bitstreamId: text('bitstream_id'),
    functionId: text('function_id'),
    ...timestamps,
  },
  (t) => [
    uniqueIndex('uniq_deployables0uuid').on(t.uuid),
    index('deployables_device_id_idx').on(t.deviceId),
    index('deployables_rp_uuid_idx').on(t.rpUuid),
  ],
);

/** A key/value fact about a deployable (Cyborg's /v2/attributes), e.g. rc=FPGA. */
export const attributes = sqliteTable(
  'attributes',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    uuid: text('uuid').notNull(),
    deployableId: integer('deployable_id').notNull(),
    key: text('key').notNull(),
    value: text('value').notNull(),
    ...timestamps,
  },
  (t) => [uniqueIndex('uniq_attributes0uuid').on(t.uuid), index('attributes_deployable_id_idx').on(t.deployableId)],
);

/** A PCI function / mdev a bind hands to one ARQ. */
export const attachHandles = sqliteTable(
  'attach_handles',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    uuid: text('uuid').notNull(),
    deployableId: integer('deployable_id').notNull(),
    attachType: text('attach_type').notNull(),
    /** JSON object, e.g. {"domain":"0000","bus":"0c","device":"00","function":"0"}. */
    attachInfo: text('attach_info').notNull(),
    /** The ARQ holding it; null when free. The unique index makes a double allocation impossible. */
    arqId: integer('arq_id'),
    ...timestamps,
  },
  (t) => [
    uniqueIndex('uniq_attach_handles0uuid').on(t.uuid),
    uniqueIndex('uniq_attach_handles0arq_id').on(t.arqId),
    index('attach_handles_deployable_id_idx').on(t.deployableId),
  ],
);

/** Accelerator requests (Cyborg's ext ARQs), with a copy of their profile group. */
export const acceleratorRequests = sqliteTable(
  'accelerator_requests',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    uuid: text('uuid').notNull(),
    state: text('state').notNull(),
    deviceProfileId: integer('device_profile_id'),
    deviceProfileName: text('device_profile_name').notNull(),
    deviceProfileGroupId: integer('device_profile_group_id').notNull(),
    /** JSON copy of the group, so later profile edits do not affect running VMs. */
    deviceProfileGroup: text('device_profile_group').notNull(),
    projectId: text('project_id'),
    hostname: text('hostname'),
    deviceRpUuid: text('device_rp_uuid'),
    instanceUuid: text('instance_uuid'),
    deployableId: integer('deployable_id'),
    attachHandleId: integer('attach_handle_id'),
    /** When the ARQ entered BindStarted: the binding-timeout sweep reads it. */
    bindStartedAt: text('bind_started_at'),
    ...timestamps,
  },
  (t) => [
    uniqueIndex('uniq_accelerator_requests0uuid').on(t.uuid),
    index('accelerator_requests_instance_uuid_idx').on(t.instanceUuid),
    index('accelerator_requests_state_idx').on(t.state),
  ],
);

/**
 * Work that must happen after a commit: bind jobs and Nova events. Rows are
 * written in the same transaction as the state change, then delivered by the
 * queue consumer; `state` is pending -> done | dead (dead-letter).
 */
export const outbox = sqliteTable(
  'cyborg_outbox',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    topic: text('topic').notNull(),
    /** JSON payload, parsed with the topic's zod schema when consumed. */
    payload: text('payload').notNull(),
    state: text('state').notNull().default('pending'),
    attempts: integer('attempts').notNull().default(0),
    /** Epoch milliseconds; a claim pushes it forward by a lease. */
    nextAttemptAt: integer('next_attempt_at').notNull(),
    lastError: text('last_error'),
    ...timestamps,
  },
  (t) => [index('cyborg_outbox_due_idx').on(t.state, t.nextAttemptAt)],
);
