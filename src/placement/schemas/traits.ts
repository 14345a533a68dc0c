// Bodies and names of the traits API (seed 002, placement/schemas/trait.py).
import * as z from 'zod';

export const CUSTOM_TRAIT_PATTERN = /^CUSTOM_[A-Z0-9_]+$/;

export const putProviderTraitsSchema = z
  .object({
    traits: z.array(
      z
        .string()
        .regex(/^[A-Z0-9_]+$/)
        .max(255),
    ),
    resource_provider_generation: z.int(),
  })
  .strict();

export function isValidCustomTrait(name: string): boolean {
  return name.length <= 255 && CUSTOM_TRAIT_PATTERN.test(name);
}
