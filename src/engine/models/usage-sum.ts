import type { Usage } from '../../contract/model-provider.js';

/**
 * `a + b`, field by field; `a` may be absent (nothing counted yet). The cache fields are
 * kept only where either side has them, so text-only providers' usage stays three numbers.
 */
export function addUsage(a: Usage | undefined, b: Usage): Usage {
  if (a === undefined) return plainUsage(b);
  return combine(a, b, 1);
}

/** `a - b`, field by field (what is left of a total once a part of it is taken out). */
export function subtractUsage(a: Usage, b: Usage): Usage {
  return combine(a, b, -1);
}

/** The usage fields alone (no `byModel` or other extras). */
export function plainUsage(u: Usage): Usage {
  const plain: { -readonly [K in keyof Usage]: Usage[K] } = {
    inputTokens: u.inputTokens,
    outputTokens: u.outputTokens,
    totalTokens: u.totalTokens,
  };
  if (u.cachedInputTokens !== undefined) plain.cachedInputTokens = u.cachedInputTokens;
  if (u.cacheWriteInputTokens !== undefined) plain.cacheWriteInputTokens = u.cacheWriteInputTokens;
  return plain;
}

function combine(a: Usage, b: Usage, sign: 1 | -1): Usage {
  const sum: { -readonly [K in keyof Usage]: Usage[K] } = {
    inputTokens: a.inputTokens + sign * b.inputTokens,
    outputTokens: a.outputTokens + sign * b.outputTokens,
    totalTokens: a.totalTokens + sign * b.totalTokens,
  };
  if (a.cachedInputTokens !== undefined || b.cachedInputTokens !== undefined)
    sum.cachedInputTokens = (a.cachedInputTokens ?? 0) + sign * (b.cachedInputTokens ?? 0);
  if (a.cacheWriteInputTokens !== undefined || b.cacheWriteInputTokens !== undefined)
    sum.cacheWriteInputTokens = (a.cacheWriteInputTokens ?? 0) + sign * (b.cacheWriteInputTokens ?? 0);
  return sum;
}
