// What discovery hands to merging and reporting: a provider tree by name.

export interface InventoryFields {
  total: number;
  reserved?: number;
  min_unit?: number;
  max_unit?: number;
  step_size?: number;
  allocation_ratio?: number;
}

export type DeviceKind = 'GPU' | 'FPGA';

/** Facts about a PCI accelerator, also reported to the accelerator service. */
export interface DeviceFacts {
  kind: DeviceKind;
  /** PCI address, e.g. 0000:00:06.0 (the attach handle) */
  pciAddress: string;
  vendorId: string;
  productId: string;
  vendorName: string;
  driver?: string;
  numaNode?: number;
  /** from nvidia-smi when available */
  model?: string;
  memoryMiB?: number;
  gpuUuid?: string;
  driverVersion?: string;
  /** mediated device type used for VGPU inventory */
  mdevType?: string;
}

export interface DiscoveredProvider {
  name: string;
  /** undefined for the compute node (root) */
  parentName?: string;
  inventories: Record<string, InventoryFields>;
  traits: string[];
  device?: DeviceFacts;
  /** Shared counters (a MIG-mode GPU; docs/extensions-gpu.md), written to /ext/resource_providers/{uuid}/counters. */
  counters?: { counters: Record<string, number>; consumption: Record<string, Record<string, number>> };
}

export interface HostFacts {
  hostname: string;
  arch: string;
  cpuModel?: string;
  cpuVendor?: string;
  onlineCpus: number;
  memoryMiB: number;
  diskGiB: number;
  instancesPath: string;
}

export interface Discovery {
  host: HostFacts;
  /** the compute node first, then its children */
  providers: DiscoveredProvider[];
}
