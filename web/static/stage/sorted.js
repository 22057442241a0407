// Lookups in arrays kept sorted by a key.

/** How many of `items`, sorted by `key`, have it at most `value` (a binary search). */
export function countUpTo(items, key, value) {
  let lo = 0;
  let hi = items.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (items[mid][key] <= value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
