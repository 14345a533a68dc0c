// An Intel Arria 10 card as a host agent reports it to Cyborg (PUT
// /accelerator/v2/hosts/{host}/devices): the tests that seed a host by hand,
// in Node and in workerd (this module imports nothing, so both can load it).

export interface AttachHandle {
  type: string;
  info: Record<string, string>;
}

/** `count` PCI functions 0.. of device 00 on bus `bus`, domain 0000. */
export const pciFunctions = (count: number, bus: string): AttachHandle[] =>
  Array.from({ length: count }, (_, i) => ({ type: 'PCI', info: { domain: '0000', bus, device: '00', function: String(i) } }));

/** One A10 card on PCI bus `bus` whose deployable `<host>_FPGA`, on provider `rp`, has one accelerator per attach handle. */
export const a10Report = (host: string, rp: string, attachHandles: AttachHandle[], bus = '0c') => ({
  devices: [
    {
      key: `0000:${bus}:00.0`,
      type: 'FPGA',
      vendor: '0x8086',
      model: 'a10',
      deployables: [{ name: `${host}_FPGA`, num_accelerators: attachHandles.length, rp_uuid: rp, attach_handles: attachHandles }],
    },
  ],
});
