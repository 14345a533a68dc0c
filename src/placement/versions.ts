// Placement microversions. One ordered list; features are named so handlers
// never compare against bare numbers. See reference MICROVERSIONS.md.
export const MIN_VERSION = '1.0';
export const MAX_VERSION = '1.39';

export const MV = {
  AGGREGATES: '1.1',
  RESOURCE_CLASSES: '1.2',
  MEMBER_OF_LIST: '1.3',
  RESOURCES_FILTER: '1.4',
  DELETE_ALL_INVENTORY: '1.5',
  TRAITS: '1.6',
  RC_PUT_CREATES: '1.7',
  ALLOC_PROJECT_USER_REQUIRED: '1.8',
  USAGES: '1.9',
  ALLOCATION_CANDIDATES: '1.10',
  ALLOCATIONS_LINK: '1.11',
  ALLOC_DICT: '1.12',
  POST_ALLOCATIONS: '1.13',
  NESTED: '1.14',
  LAST_MODIFIED: '1.15',
  AC_LIMIT: '1.16',
  AC_REQUIRED: '1.17',
  RP_REQUIRED: '1.18',
  AGGREGATE_GENERATION: '1.19',
  POST_RP_RETURNS_BODY: '1.20',
  AC_MEMBER_OF: '1.21',
  FORBIDDEN_TRAITS: '1.22',
  ERROR_CODES: '1.23',
  MEMBER_OF_MULTI: '1.24',
  GRANULAR: '1.25',
  RESERVED_EQUALS_TOTAL: '1.26',
  AC_ALL_RESOURCES_IN_SUMMARY: '1.27',
  CONSUMER_GENERATION: '1.28',
  AC_NESTED: '1.29',
  RESHAPER: '1.30',
  AC_IN_TREE: '1.31',
  FORBIDDEN_AGGREGATES: '1.32',
  STRING_SUFFIXES: '1.33',
  MAPPINGS: '1.34',
  ROOT_REQUIRED: '1.35',
  SAME_SUBTREE: '1.36',
  REPARENT: '1.37',
  CONSUMER_TYPES: '1.38',
  ANY_TRAITS: '1.39',
} as const;
export type Feature = keyof typeof MV;

/** What the domain needs of a request's microversion (http/microversion's Microversion is one). */
export interface VersionCheck {
  atLeast(v: string): boolean;
}
