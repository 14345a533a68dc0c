import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { countCpuList, discover, parseCpuinfo } from '../src/discover/index.js';
import { parseNvidiaSmiCsv } from '../src/discover/nvidia-smi.js';
import { providerUuid } from '../src/discover/uuid.js';
import type { Discovery } from '../src/discover/types.js';
import { main } from '../src/main.js';

const fixture = (name: string) => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));
// DISK_GB comes from statfs of the instances path: pin it for fixture trees.
const disk100 = () => ({ bsize: 4096, blocks: (100 * 1024 ** 3) / 4096 });

describe('discovery from fixture trees', () => {
  it('CPU-only host: VCPU/MEMORY_MB/DISK_GB with reserved amounts, CPU and arch traits, no children', async () => {
    const found = await discover({ root: fixture('cpu-only'), statfs: disk100, reserved: { vcpu: 1, memoryMb: 1024, diskGb: 5 } });
    expect(found.host).toMatchObject({ hostname: 'cpu-only-host', arch: 'x86_64', onlineCpus: 4, memoryMiB: 16000, diskGiB: 100 });
    expect(found.providers).toHaveLength(1);
    const [node] = found.providers;
    expect(node.parentName).toBeUndefined();
    expect(node.inventories).toEqual({
      VCPU: { total: 4, reserved: 1, min_unit: 1, max_unit: 4, step_size: 1 },
      MEMORY_MB: { total: 16000, reserved: 1024, min_unit: 1, max_unit: 16000, step_size: 1 },
      DISK_GB: { total: 100, reserved: 5, min_unit: 1, max_unit: 100, step_size: 1 },
    });
    expect(node.traits).toEqual(
      expect.arrayContaining([
        'COMPUTE_NODE',
        'HW_ARCH_X86_64',
        'HW_CPU_HYPERTHREADING',
        'HW_CPU_X86_AMD_SVM',
        'HW_CPU_X86_AVX2',
        'HW_CPU_X86_SSE41',
        'HW_CPU_X86_SSE3',
        'HW_CPU_X86_SHA',
      ]),
    );
    // ssbd is Intel's SSBD only on Intel parts; no vmx on this AMD host
    expect(node.traits).not.toContain('HW_CPU_X86_INTEL_VMX');
    expect(node.traits).not.toContain('HW_CPU_X86_AVX512F');
  });

  it('host with 2 NVIDIA GPUs: child PGPU providers (VGPU where mdevs exist), vendor/product/model traits', async () => {
    const found = await discover({ root: fixture('two-nvidia'), statfs: disk100 });
    expect(found.providers.map((p) => [p.name, p.parentName])).toEqual([
      ['gpu-host-2', undefined],
      ['gpu-host-2_pci_0000_3b_00_0', 'gpu-host-2'],
      ['gpu-host-2_pci_0000_86_00_0', 'gpu-host-2'],
    ]);
    const [, plain, mediated] = found.providers;
    expect(plain.inventories).toEqual({ PGPU: { total: 1, reserved: 0, min_unit: 1, max_unit: 1, step_size: 1 } });
    expect(mediated.inventories.VGPU).toEqual({ total: 4, reserved: 0, min_unit: 1, max_unit: 4, step_size: 1 });
    expect(plain.traits).toEqual([
      'CUSTOM_GPU_MEMORY_40GB',
      'CUSTOM_GPU_MODEL_NVIDIA_A100_PCIE_40GB',
      'CUSTOM_GPU_NVIDIA',
      'CUSTOM_GPU_PRODUCT_ID_20B0',
    ]);
    expect(mediated.device).toMatchObject({
      kind: 'GPU',
      pciAddress: '0000:86:00.0',
      vendorId: '10de',
      productId: '20b0',
      driver: 'nvidia',
      numaNode: 1,
      model: 'NVIDIA A100-PCIE-40GB',
      memoryMiB: 40960,
      mdevType: 'nvidia-471',
    });
    expect(found.providers[0].traits).toEqual(
      expect.arrayContaining(['HW_CPU_X86_INTEL_VMX', 'HW_CPU_X86_AVX512F', 'HW_CPU_X86_TSX', 'HW_CPU_X86_INTEL_SSBD']),
    );
  });

  it('NVIDIA GPUs without nvidia-smi still become providers, without model facts', async () => {
    const found = await discover({ root: fixture('two-nvidia'), statfs: disk100, nvidiaSmi: async () => undefined });
    expect(found.providers).toHaveLength(3);
    expect(found.providers[1].device?.model).toBeUndefined();
    expect(found.providers[1].traits).toEqual(['CUSTOM_GPU_NVIDIA', 'CUSTOM_GPU_PRODUCT_ID_20B0']);
  });

  it('host with an FPGA: child provider with FPGA inventory and its PCI address as attach handle', async () => {
    const found = await discover({ root: fixture('fpga'), statfs: disk100 });
    expect(found.providers).toHaveLength(2);
    const fpga = found.providers[1];
    expect(fpga).toMatchObject({
      name: 'fpga-host_pci_0000_5e_00_0',
      parentName: 'fpga-host',
      inventories: { FPGA: { total: 1, reserved: 0, min_unit: 1, max_unit: 1, step_size: 1 } },
      traits: ['CUSTOM_FPGA_INTEL', 'CUSTOM_FPGA_PRODUCT_ID_09C4'],
    });
    expect(fpga.device).toMatchObject({ kind: 'FPGA', pciAddress: '0000:5e:00.0', driver: 'intel-fpga-pci', numaNode: 0 });
  });

  it('H100 fixture tree (shared capture) matches `discover --json` run on a real H100 machine', async () => {
    const real = JSON.parse(readFileSync(fixture('h100-discover.json'), 'utf8')) as Discovery;
    const found = await discover({ root: fixture('h100-host'), statfs: () => ({ bsize: 1024 ** 3, blocks: real.host.diskGiB }) });
    expect(found.host).toEqual(real.host);
    // Provider uuids and the GPU's uuid differ per machine; everything else must agree.
    const comparable = (d: Discovery) =>
      d.providers.map(({ device, ...p }) => ({ ...p, uuid: undefined, device: device && { ...device, gpuUuid: undefined } }));
    expect(comparable(found)).toEqual(comparable(real));
    expect(found.providers[1].device).toMatchObject({ pciAddress: '0000:00:06.0', model: 'NVIDIA H100 80GB HBM3', memoryMiB: 81559 });
  });

  it('runs on this machine for real without crashing (no GPU needed)', async () => {
    const found = await discover({ instancesPath: '/tmp' });
    expect(found.host.onlineCpus).toBeGreaterThan(0);
    expect(found.providers[0].inventories.VCPU.total).toBe(found.host.onlineCpus);
  });
});

describe('parsers', () => {
  it('counts CPU lists', () => {
    expect(countCpuList('0-3,6,8-9\n')).toBe(7);
    expect(countCpuList('0')).toBe(1);
  });

  it('reads the architecture from cpuinfo', () => {
    expect(parseCpuinfo('processor : 0\nCPU architecture: 8\nFeatures : fp asimd\n').arch).toBe('aarch64');
    expect(parseCpuinfo('processor : 0\nflags : fpu lm sse\n').arch).toBe('x86_64');
  });

  it('maps nvidia-smi 8-digit PCI domains to sysfs addresses', () => {
    const csv =
      'index, name, pci.bus_id, memory.total [MiB], uuid, driver_version\n0, NVIDIA H100 80GB HBM3, 00000000:00:06.0, 81559 MiB, GPU-1, 580.1\n';
    expect(parseNvidiaSmiCsv(csv)).toEqual([
      { pciAddress: '0000:00:06.0', model: 'NVIDIA H100 80GB HBM3', memoryMiB: 81559, gpuUuid: 'GPU-1', driverVersion: '580.1' },
    ]);
  });

  it('derives stable v5 uuids from provider names', () => {
    expect(providerUuid('vm')).toBe(providerUuid('vm'));
    expect(providerUuid('vm')).not.toBe(providerUuid('vm2'));
    expect(providerUuid('vm')).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });
});

describe('placement-agent discover', () => {
  const run = async (args: string[]) => {
    const out: string[] = [];
    const err: string[] = [];
    const code = await main(['discover', ...args], { out: (t) => out.push(t), err: (t) => err.push(t), env: {} });
    return { code, out: out.join('\n'), err: err.join('\n') };
  };

  it('--json prints the host facts and the provider tree with uuids', async () => {
    const { code, out } = await run(['--root', fixture('fpga'), '--json', '--host', 'edge-7']);
    expect(code).toBe(0);
    const body = JSON.parse(out) as { host: { hostname: string }; providers: { name: string; uuid: string }[] };
    expect(body.host.hostname).toBe('edge-7');
    expect(body.providers.map((p) => [p.name, p.uuid])).toEqual([
      ['edge-7', providerUuid('edge-7')],
      ['edge-7_pci_0000_5e_00_0', providerUuid('edge-7_pci_0000_5e_00_0')],
    ]);
  });

  it('prints a readable table by default', async () => {
    const { code, out } = await run(['--root', fixture('h100-host')]);
    expect(code).toBe(0);
    expect(out).toContain('device GPU NVIDIA 10de:2330 at 0000:00:06.0, NVIDIA H100 80GB HBM3, 81559 MiB');
  });

  it('a root without /proc is an error, not an empty host', async () => {
    const { code, err } = await run(['--root', '/nonexistent-root']);
    expect(code).toBe(1);
    expect(err).toMatch(/--root must point at a Linux root/);
  });
});
