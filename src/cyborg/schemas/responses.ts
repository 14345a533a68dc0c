// Response bodies of the Cyborg v2 API (and this service's agent and outbox
// additions): the one description of the wire shapes. ../present.ts returns
// the types inferred from these schemas, GET /openapi.json is generated from
// them, and the OpenAPI test validates live answers against the document.
import * as z from 'zod';
import { HostDevicesReport } from './agent.js';

/** Cyborg's error envelope: a JSON string inside `error_message`, as upstream's WSME faults (../http.ts renders it). */
export const CyborgErrorEnvelope = z.object({
  error_message: z.string().describe('JSON text: {"faultcode": "Client"|"Server", "faultstring": "...", "debuginfo": null}'),
});

const links = z.array(z.object({ href: z.string(), rel: z.string() }));
const timestamps = { created_at: z.string(), updated_at: z.string().nullable() };

/** GET /accelerator/v2 (and each entry of GET /accelerator). */
export const V2VersionSchema = z.object({
  id: z.string(),
  min_version: z.string(),
  max_version: z.string(),
  status: z.string(),
  links,
});
export const VersionsSchema = z.object({
  name: z.string(),
  description: z.string(),
  versions: z.array(V2VersionSchema),
  default_version: V2VersionSchema,
});
export type VersionsJson = z.infer<typeof VersionsSchema>;
export type V2VersionJson = z.infer<typeof V2VersionSchema>;

export const DeviceProfileSchema = z.object({
  uuid: z.string(),
  name: z.string(),
  description: z.string(),
  groups: z.array(z.record(z.string(), z.string())),
  ...timestamps,
  links,
});
export type DeviceProfileJson = z.infer<typeof DeviceProfileSchema>;
export const DeviceProfileListSchema = z.object({ device_profiles: z.array(DeviceProfileSchema) });
export const DeviceProfileShowSchema = z.object({ device_profile: DeviceProfileSchema });

export const ArqSchema = z.object({
  uuid: z.string(),
  state: z.string().describe('Initial, BindStarted, Bound, Unbound, BindFailed or Deleting'),
  device_profile_name: z.string(),
  device_profile_group_id: z.number().int(),
  hostname: z.string().nullable(),
  device_rp_uuid: z.string().nullable(),
  instance_uuid: z.string().nullable(),
  project_id: z.string().nullable(),
  attach_handle_type: z.string().describe('empty until Bound'),
  attach_handle_uuid: z.string().nullable(),
  attach_handle_info: z.record(z.string(), z.string()),
  links,
  ...timestamps,
});
export type ArqJson = z.infer<typeof ArqSchema>;
export const ArqListSchema = z.object({ arqs: z.array(ArqSchema) });

const deviceV2_0 = z.object({
  uuid: z.string(),
  type: z.string(),
  vendor: z.string(),
  model: z.string(),
  std_board_info: z.string().nullable(),
  vendor_board_info: z.string().nullable(),
  hostname: z.string(),
  ...timestamps,
  links,
});
const deviceV2_3 = deviceV2_0.extend({ status: z.string().describe('enabled or maintaining') });
export type DeviceJson = z.infer<typeof deviceV2_0> & Partial<z.infer<typeof deviceV2_3>>;
/** A device: its `status` from 2.3. */
export const deviceSchema = (withStatus: boolean) => (withStatus ? deviceV2_3 : deviceV2_0);
const deviceListV2_0 = z.object({ devices: z.array(deviceV2_0) });
const deviceListV2_3 = z.object({ devices: z.array(deviceV2_3) });
export const deviceListSchema = (withStatus: boolean) => (withStatus ? deviceListV2_3 : deviceListV2_0);
/** PUT /v2/hosts/{hostname}/devices answers the host's devices, always with status. */
export const ReportedDevicesSchema = deviceListV2_3;

export const DeployableSchema = z.object({
  uuid: z.string(),
  parent_id: z.null(),
  root_id: z.null(),
  name: z.string(),
  num_accelerators: z.number().int(),
  device_id: z.number().int(),
  device_uuid: z.string().nullable(),
  rp_uuid: z.string().nullable(),
  driver_name: z.string().nullable(),
  bitstream_id: z.string().nullable(),
  function_id: z.string().nullable(),
  ...timestamps,
  links,
});
export type DeployableJson = z.infer<typeof DeployableSchema>;
export const DeployableListSchema = z.object({ deployables: z.array(DeployableSchema) });

export const AttributeSchema = z.object({
  uuid: z.string(),
  id: z.number().int(),
  deployable_id: z.number().int(),
  key: z.string(),
  value: z.string(),
  ...timestamps,
  links,
});
export type AttributeJson = z.infer<typeof AttributeSchema>;
export const AttributeListSchema = z.object({ attributes: z.array(AttributeSchema) });

/** GET /v2/hosts/{hostname}/devices: the host's last report, in the form the agent sends it. */
export const HostReportSchema = HostDevicesReport;

export const OutboxListSchema = z.object({
  outbox: z.array(
    z.object({
      id: z.number().int(),
      topic: z.string(),
      state: z.string().describe('pending, done or dead'),
      attempts: z.number().int(),
      next_attempt_at: z.string(),
      last_error: z.string().nullable(),
      payload: z.unknown(),
      ...timestamps,
    }),
  ),
});
export type OutboxListJson = z.infer<typeof OutboxListSchema>;
