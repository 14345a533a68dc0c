// Cyborg v2 microversions, oldest first; a comment per version says what it adds.
export const VERSIONS = [
  '2.0', // base v2 API
  '2.1', // ARQ PATCH may carry /project_id (admin only)
  '2.2', // GET /device_profiles/{name}
  '2.3', // devices carry `status`
] as const;

export const MIN_VERSION = VERSIONS[0];
export const MAX_VERSION = VERSIONS[VERSIONS.length - 1]!;

export const MV = {
  ARQ_PROJECT_ID: '2.1',
  PROFILE_BY_NAME: '2.2',
  DEVICE_STATUS: '2.3',
} as const;
