// A set that forgets its oldest entries.

/** A set that forgets its oldest entries beyond `limit` (an all-night show has many lines). */
export class RecentSet {
  constructor(limit) {
    this.limit = limit;
    this.items = new Set();
  }

  has(x) {
    return this.items.has(x);
  }

  add(x) {
    this.items.add(x);
    if (this.items.size > this.limit) this.items.delete(this.items.values().next().value);
  }
}
