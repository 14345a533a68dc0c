// Wire shapes (snake_case) of Cyborg objects.
import type { deployables, devices } from '../db/schema/cyborg.js';
import type { AttributeRow } from './repo/attributes.js';
import type { ArqWithHandle } from './repo/arqs.js';
import { profileGroups, type DeviceProfileRow } from './repo/device-profiles.js';
import type { ArqJson, AttributeJson, DeployableJson, DeviceJson, DeviceProfileJson } from './schemas/responses.js';

type Link = { href: string; rel: string }[];
type LinkFor = (collection: string, uuid: string) => Link;

export function presentDeviceProfile(row: DeviceProfileRow, link: LinkFor): DeviceProfileJson {
  return {
    uuid: row.uuid,
    name: row.name,
    description: row.description ?? '',
    groups: profileGroups(row),
    created_at: row.createdAt,
    updated_at: row.updatedAt,
    links: link('device_profiles', row.uuid),
  };
}

export function presentArq({ arq, handle }: ArqWithHandle, link: LinkFor): ArqJson {
  const bound = arq.state === 'Bound' && handle !== null;
  return {
    uuid: arq.uuid,
    state: arq.state,
    device_profile_name: arq.deviceProfileName,
    device_profile_group_id: arq.deviceProfileGroupId,
    hostname: arq.hostname,
    device_rp_uuid: arq.deviceRpUuid,
    instance_uuid: arq.instanceUuid,
    project_id: arq.projectId,
    attach_handle_type: bound ? handle.attachType : '',
    attach_handle_uuid: bound ? handle.uuid : null,
    attach_handle_info: bound ? (JSON.parse(handle.attachInfo) as Record<string, string>) : {},
    links: link('accelerator_requests', arq.uuid),
    created_at: arq.createdAt,
    updated_at: arq.updatedAt,
  };
}

export function presentDevice(row: typeof devices.$inferSelect, link: LinkFor, withStatus: boolean): DeviceJson {
  return {
    uuid: row.uuid,
    type: row.type,
    vendor: row.vendor,
    model: row.model,
    std_board_info: row.stdBoardInfo,
    vendor_board_info: row.vendorBoardInfo,
    hostname: row.hostname,
    ...(withStatus ? { status: row.status } : {}),
    created_at: row.createdAt,
    updated_at: row.updatedAt,
    links: link('devices', row.uuid),
  };
}

export function presentDeployable(row: typeof deployables.$inferSelect, deviceUuid: string | undefined, link: LinkFor): DeployableJson {
  return {
    uuid: row.uuid,
    parent_id: null,
    root_id: null,
    name: row.name,
    num_accelerators: row.numAccelerators,
    device_id: row.deviceId,
    device_uuid: deviceUuid ?? null,
    rp_uuid: row.rpUuid,
    driver_name: row.driverName,
    bitstream_id: row.bitstreamId,
    function_id: row.functionId,
    created_at: row.createdAt,
    updated_at: row.updatedAt,
    links: link('deployables', row.uuid),
  };
}

export function presentAttribute(row: AttributeRow, link: LinkFor): AttributeJson {
  return {
    uuid: row.uuid,
    id: row.id,
    deployable_id: row.deployableId,
    key: row.key,
    value: row.value,
    created_at: row.createdAt,
    updated_at: row.updatedAt,
    links: link('attributes', row.uuid),
  };
}
