// Cyborg (accelerator) tables: device profiles, devices, deployables, attach
// handles, accelerator requests, and the outbox that carries bind work and
// Nova events past the commit. Owned by the accelerator issue.
export {};
