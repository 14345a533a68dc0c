// What a host agent reports: every accelerator device of one host, with its
// deployables (one per device resource provider) and their attach handles.
// PUT /accelerator/v2/hosts/{hostname}/devices replaces the host's inventory.
import * as z from 'zod';

export const AttachHandleReport = z
  .object({
    type: z.enum(['PCI', 'MDEV', 'TEST_PCI']),
    /** PCI: {"domain":"0000","bus":"0c","device":"00","function":"0"}; MDEV: includes asked_type. */
    info: z.record(z.string(), z.string()),
  })
  .strict();

export const DeployableReport = z
  .object({
    name: z.string().min(1).max(255),
    num_accelerators: z.number().int().min(0),
    /** The device resource provider in Placement that this deployable backs. */
    rp_uuid: z.uuid().nullable().optional(),
    driver_name: z.string().nullable().optional(),
    bitstream_id: z.string().nullable().optional(),
    function_id: z.string().nullable().optional(),
    attach_handles: z.array(AttachHandleReport).default([]),
  })
  .strict();

export const DeviceReport = z
  .object({
    /** Stable key within the host, e.g. the PCI address of the card. */
    key: z.string().min(1).max(255),
    type: z.string().min(1).max(30),
    vendor: z.string().max(255),
    model: z.string().max(255),
    std_board_info: z.string().nullable().optional(),
    vendor_board_info: z.string().nullable().optional(),
    status: z.enum(['enabled', 'maintaining']).optional(),
    deployables: z.array(DeployableReport).default([]),
  })
  .strict();

export const HostDevicesReport = z.object({ devices: z.array(DeviceReport) }).strict();

/** The {hostname} of PUT /hosts/{hostname}/devices: the compute node's root provider name, so at most 255 characters like Cyborg's column. */
export const Hostname = z.string().min(1, 'hostname must not be empty').max(255, 'hostname must be at most 255 characters');
export type HostDevicesReport = z.infer<typeof HostDevicesReport>;

/** PUT /accelerator/v2/deployables/{uuid}/programmed: the agent finished programming an FPGA. */
export const ProgrammedReport = z
  .object({
    bitstream_id: z.string().nullable().optional(),
    function_id: z.string().nullable().optional(),
  })
  .strict();
export type ProgrammedReport = z.infer<typeof ProgrammedReport>;
