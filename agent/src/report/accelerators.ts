// Reports the host's PCI accelerators to the accelerator (Cyborg) API of the
// same service: PUT /accelerator/v2/hosts/{hostname}/devices with one device
// per discovered GPU/FPGA child provider, one deployable backing that
// provider, and the PCI function as its attach handle. The body is the one
// src/cyborg/schemas/agent.ts validates; the report replaces the host's list.
import type { z } from 'zod';
import type { HostDevicesReport } from '../../../src/cyborg/schemas/agent.js';
import type { DiscoveredProvider } from '../discover/types.js';
import type { PlacementClient } from './client.js';

/**
 * The request body, typed from the zod schema the service validates it with
 * (its input side: fields with defaults may be left out), so the agent cannot
 * send a shape the endpoint refuses without failing to compile.
 */
export type AcceleratorReport = z.input<typeof HostDevicesReport>;

/** "0000:0c:00.1" -> {domain, bus, device, function}, as Nova reads attach_handle_info. */
export function pciAttachInfo(address: string): Record<string, string> | undefined {
  const m = /^([0-9a-f]{4}):([0-9a-f]{2}):([0-9a-f]{2})\.([0-7])$/i.exec(address);
  return m ? { domain: m[1]!, bus: m[2]!, device: m[3]!, function: m[4]! } : undefined;
}

export function acceleratorReport(providers: readonly DiscoveredProvider[], uuidOf: (name: string) => string): AcceleratorReport {
  const devices: AcceleratorReport['devices'] = [];
  for (const provider of providers) {
    const device = provider.device;
    const info = device && pciAttachInfo(device.pciAddress);
    if (!device || !info) continue;
    const units = Object.values(provider.inventories).reduce((sum, inv) => sum + inv.total, 0);
    devices.push({
      key: device.pciAddress,
      type: device.kind,
      vendor: device.vendorId,
      model: device.model ?? device.productId,
      std_board_info: JSON.stringify({ vendor_id: device.vendorId, product_id: device.productId, numa_node: device.numaNode ?? null }),
      vendor_board_info: device.vendorName || null,
      deployables: [
        {
          name: provider.name,
          num_accelerators: Math.max(1, units),
          rp_uuid: uuidOf(provider.name),
          driver_name: device.driver ?? null,
          attach_handles: [{ type: 'PCI', info }],
        },
      ],
    });
  }
  return { devices };
}

/** The fields this agent sends, in a canonical order, for comparing with what the service holds. */
function canonicalReport(report: AcceleratorReport): string {
  const sortedInfo = (info: Record<string, string>) => Object.fromEntries(Object.entries(info).sort(([a], [b]) => a.localeCompare(b)));
  return JSON.stringify(
    [...report.devices]
      .sort((a, b) => a.key.localeCompare(b.key))
      .map((d) => [
        d.key,
        d.type,
        d.vendor,
        d.model,
        d.std_board_info ?? null,
        d.vendor_board_info ?? null,
        [...(d.deployables ?? [])]
          .sort((a, b) => a.name.localeCompare(b.name))
          .map((dep) => [
            dep.name,
            dep.num_accelerators,
            dep.rp_uuid ?? null,
            dep.driver_name ?? null,
            (dep.attach_handles ?? []).map((h) => JSON.stringify([h.type, sortedInfo(h.info)])).sort(),
          ]),
      ]),
  );
}

export interface AcceleratorOutcome {
  devices: number;
  /** false when the service already held exactly this report. */
  sent: boolean;
}

/**
 * Sends the host's devices when they differ from what the service holds
 * (read back with GET on the same path), so a periodic agent writes only
 * what changed.
 */
export async function reportAccelerators(
  client: PlacementClient,
  hostname: string,
  providers: readonly DiscoveredProvider[],
  uuidOf: (name: string) => string,
): Promise<AcceleratorOutcome> {
  const report = acceleratorReport(providers, uuidOf);
  const path = `/accelerator/v2/hosts/${encodeURIComponent(hostname)}/devices`;
  const current = await client.request<AcceleratorReport>('GET', path);
  if (current.body && Array.isArray(current.body.devices) && canonicalReport(current.body) === canonicalReport(report)) {
    return { devices: report.devices.length, sent: false };
  }
  await client.request('PUT', path, report);
  return { devices: report.devices.length, sent: true };
}
