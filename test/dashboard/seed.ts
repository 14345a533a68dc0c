// A small cloud for the dashboard tests, written through the public Placement
// API (so the dashboard shows exactly what clients wrote): two compute trees
// and a storage provider, allocations from two projects, and one provider
// whose total an operator lowered under its usage (over capacity).
export type Call = (method: string, path: string, body?: unknown) => Promise<Response>;

/** An admin's JSON call at the latest microversion, through `request` (fetch on a server's URL, or an app's own request). */
export const adminCall =
  (request: (path: string, init: RequestInit) => Response | Promise<Response>): Call =>
  async (method, path, body) =>
    request(path, {
      method,
      headers: { 'x-auth-token': 'admin', 'content-type': 'application/json', 'openstack-api-version': 'placement latest' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });

export const CLOUD = {
  aggregate: 'a7d0e4e2-3f2b-4d59-9c51-0b6f4b9d2a11',
  compute1: { uuid: 'c0000001-0000-4000-8000-000000000001', name: 'compute-1' },
  gpu0: { uuid: 'c0000001-0000-4000-8000-0000000000a0', name: 'compute-1-gpu0' },
  compute2: { uuid: 'c0000002-0000-4000-8000-000000000002', name: 'compute-2' },
  storage: { uuid: 'c0000003-0000-4000-8000-000000000003', name: 'storage-1' },
  consumers: {
    vm1: 'e0000001-0000-4000-8000-000000000001',
    vm2: 'e0000002-0000-4000-8000-000000000002',
    vol: 'e0000003-0000-4000-8000-000000000003',
  },
} as const;

export const STORAGE_TRAITS = [
  'COMPUTE_VOLUME_EXTEND',
  'COMPUTE_VOLUME_MULTI_ATTACH',
  'HW_CPU_X86_AVX',
  'HW_CPU_X86_SSE',
  'HW_CPU_X86_SSE2',
  'HW_CPU_X86_SSE41',
  'HW_CPU_X86_SSE42',
  'HW_NIC_SRIOV',
  'STORAGE_DISK_SSD',
  'COMPUTE_NET_ATTACH_INTERFACE',
  'COMPUTE_TRUSTED_CERTS',
  'COMPUTE_DEVICE_TAGGING',
] as const;

async function ok(res: Promise<Response>): Promise<unknown> {
  const r = await res;
  const text = await r.text();
  if (r.status >= 300) throw new Error(`seed request failed: ${r.status} ${text}`);
  return text ? (JSON.parse(text) as unknown) : undefined;
}

export async function seedCloud(call: Call): Promise<void> {
  const { aggregate, compute1, gpu0, compute2, storage, consumers } = CLOUD;
  for (const rp of [compute1, compute2, storage]) await ok(call('POST', '/resource_providers', rp));
  await ok(call('POST', '/resource_providers', { ...gpu0, parent_provider_uuid: compute1.uuid }));
  await ok(
    call('PUT', `/resource_providers/${compute1.uuid}/inventories`, {
      resource_provider_generation: 0,
      inventories: {
        VCPU: { total: 16, allocation_ratio: 2 },
        MEMORY_MB: { total: 65536, reserved: 512 },
      },
    }),
  );
  await ok(
    call('PUT', `/resource_providers/${gpu0.uuid}/inventories`, { resource_provider_generation: 0, inventories: { VGPU: { total: 4 } } }),
  );
  await ok(
    call('PUT', `/resource_providers/${compute2.uuid}/inventories`, {
      resource_provider_generation: 0,
      inventories: { VCPU: { total: 8 } },
    }),
  );
  await ok(
    call('PUT', `/resource_providers/${storage.uuid}/inventories`, {
      resource_provider_generation: 0,
      inventories: { DISK_GB: { total: 1000 } },
    }),
  );
  await ok(
    call('PUT', `/resource_providers/${compute1.uuid}/traits`, {
      resource_provider_generation: 1,
      traits: ['HW_CPU_X86_AVX2', 'COMPUTE_STATUS_DISABLED'],
    }),
  );
  await ok(call('PUT', '/traits/CUSTOM_GPU_A'));
  await ok(call('PUT', `/resource_providers/${gpu0.uuid}/traits`, { resource_provider_generation: 1, traits: ['CUSTOM_GPU_A'] }));
  await ok(call('PUT', `/resource_providers/${compute1.uuid}/aggregates`, { resource_provider_generation: 2, aggregates: [aggregate] }));
  await ok(call('PUT', `/resource_providers/${storage.uuid}/aggregates`, { resource_provider_generation: 1, aggregates: [aggregate] }));
  // A storage host with the long trait list real hosts report (the page folds it).
  await ok(call('PUT', `/resource_providers/${storage.uuid}/traits`, { resource_provider_generation: 2, traits: [...STORAGE_TRAITS] }));

  const claim = (consumer: string, project: string, allocations: Record<string, Record<string, number>>) =>
    ok(
      call('PUT', `/allocations/${consumer}`, {
        allocations: Object.fromEntries(Object.entries(allocations).map(([rp, resources]) => [rp, { resources }])),
        project_id: project,
        user_id: 'operator',
        consumer_generation: null,
        consumer_type: 'INSTANCE',
      }),
    );
  await claim(consumers.vm1, 'project-alpha', { [compute1.uuid]: { VCPU: 10, MEMORY_MB: 4096 }, [gpu0.uuid]: { VGPU: 1 } });
  await claim(consumers.vm2, 'project-beta', { [compute2.uuid]: { VCPU: 6 } });
  await claim(consumers.vol, 'project-beta', { [storage.uuid]: { DISK_GB: 850 } });
  // The operator shrinks compute-2 under what it already carries: 6 used, capacity 4.
  await ok(call('PUT', `/resource_providers/${compute2.uuid}/inventories/VCPU`, { resource_provider_generation: 2, total: 4 }));

  // Accelerators: compute-1's agent reports its GPU; one request waits to be bound.
  await ok(
    call('PUT', `/accelerator/v2/hosts/${compute1.name}/devices`, {
      devices: [
        {
          key: '0000:3b:00.0',
          type: 'GPU',
          vendor: '0x10de',
          model: 'A100',
          deployables: [
            {
              name: gpu0.name,
              num_accelerators: 1,
              rp_uuid: gpu0.uuid,
              driver_name: 'nvidia',
              attach_handles: [{ type: 'PCI', info: { domain: '0000', bus: '3b', device: '00', function: '0' } }],
            },
          ],
        },
      ],
    }),
  );
  await ok(call('POST', '/accelerator/v2/device_profiles', [{ name: 'gpu-small', description: null, groups: [{ 'resources:VGPU': 1 }] }]));
  await ok(call('POST', '/accelerator/v2/accelerator_requests', { device_profile_name: 'gpu-small' }));
}
