// The bench's data layout and candidate queries, shared by the HTTP run
// (run.ts) and the in-process check (inprocess.ts).

/** The fixed aggregate of perfload; two more spread the providers over three. */
export const AGG = '0f1f5ed5-6f23-4b0b-8e0a-35d3c6a1a001';
export const AGGS = [AGG, '0f1f5ed5-6f23-4b0b-8e0a-35d3c6a1a002', '0f1f5ed5-6f23-4b0b-8e0a-35d3c6a1a003'];
export const NESTED_AGG = '0f1f5ed5-6f23-4b0b-8e0a-35d3c6a1a0ff';

export const QUERY_A = `resources=VCPU:1,DISK_GB:10,MEMORY_MB:256&member_of=${AGG}&required=HW_CPU_X86_AVX2`;
export const QUERY_E =
  'resources=DISK_GB:10&resources_CPU=VCPU:2,MEMORY_MB:1024' +
  '&resources_NET=SRIOV_NET_VF:1,NET_BW_EGR_KILOBIT_PER_SEC:1000&same_subtree=_CPU,_NET&group_policy=none';

/** The queries the in-process check runs, by the bench's letters. */
export const NAMED_QUERIES: [string, string][] = [
  ['(a)', QUERY_A],
  ['(b)', `${QUERY_A}&limit=10`],
  ['(e)', QUERY_E],
  ['(e) limit=10', `${QUERY_E}&limit=10`],
];
