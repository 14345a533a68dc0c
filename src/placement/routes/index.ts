// Every Placement endpoint, by resource. Find a path here, then open its file.
import { Hono } from 'hono';
import type { AppEnv } from '../../http/env.js';
import { aggregateRoutes } from './aggregates.js';
import { allocationCandidateRoutes } from './allocation-candidates.js';
import { allocationRoutes } from './allocations.js';
import { inventoryRoutes } from './inventories.js';
import { reshaperRoutes } from './reshaper.js';
import { resourceClassRoutes } from './resource-classes.js';
import { resourceProviderRoutes } from './resource-providers.js';
import { usageRoutes } from './usages.js';
import { rootRoutes } from './root.js';
import { traitRoutes } from './traits.js';

export const placementRoutes = new Hono<AppEnv>();
placementRoutes.route('/', rootRoutes);
placementRoutes.route('/', resourceProviderRoutes);
placementRoutes.route('/', aggregateRoutes);
placementRoutes.route('/', traitRoutes);
placementRoutes.route('/', allocationRoutes);
placementRoutes.route('/', allocationCandidateRoutes);
placementRoutes.route('/', inventoryRoutes);
placementRoutes.route('/', reshaperRoutes);
placementRoutes.route('/', resourceClassRoutes);
placementRoutes.route('/', usageRoutes);
