// Placement's profile for the HTTP kit: service type "placement" and its
// version range, webob-worded errors in the {"errors": [...]} envelope, and
// the operator-overridable policy that comes with the deps.
import { httpKit, type ApiProfile } from '../../http/kit.js';
import { placementError, renderPlacementError } from './render-errors.js';
import { MAX_VERSION, MIN_VERSION } from '../versions.js';

export const PLACEMENT_API: ApiProfile = {
  logLabel: 'unhandled error',
  error: placementError,
  render: renderPlacementError,
  versions: {
    serviceType: 'placement',
    min: MIN_VERSION,
    max: MAX_VERSION,
    acceptBare: false,
    always: {},
    negotiated: { vary: 'openstack-api-version' },
    refuse: (failure) =>
      failure.reason === 'syntax'
        ? { status: 400, message: `Invalid microversion: invalid version string: ${failure.value}` }
        : {
            status: 406,
            message: `Invalid microversion: Unacceptable version header: ${failure.value}`,
            extra: { max_version: MAX_VERSION, min_version: MIN_VERSION },
          },
  },
  policy: {
    enforcer: (c) => c.get('deps').policy,
    refuseSystemScope: true,
    denied: (rule) => `Policy does not allow ${rule} to be performed.`,
  },
};

export const placementHttp = httpKit(PLACEMENT_API);
export const { resource, authorize } = placementHttp;
