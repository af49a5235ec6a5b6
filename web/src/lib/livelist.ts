// What to do with a row of the application list's event stream. The
// stream first sends every row of the list (up to a thousand, newest
// first, as the list orders them), then the rows that change. A row of
// the page on screen is updated in place. A row the page does not show is
// either an older app (further down the list: nothing to do) or a new one
// (the first page must be read again); the first burst tells them apart by
// order: once the page's own rows have all come by, the rest are older.

export type RowAction = 'update' | 'reload' | 'ignore';

export class StreamTracker {
  private seen = new Set<string>();
  private pageRowsSeen = 0;
  private settled = false;

  /** reset forgets the stream (new filters, or a new connection). */
  reset(): void {
    this.seen.clear();
    this.pageRowsSeen = 0;
    this.settled = false;
  }

  /** settle marks the end of the first burst (the stream went quiet). */
  settle(): void {
    this.settled = true;
  }

  /**
   * row decides for the row key, given the keys of the page on screen,
   * whether it is the first page, and the page size.
   */
  row(key: string, pageKeys: string[], firstPage: boolean, pageSize: number): RowAction {
    const first = !this.seen.has(key);
    this.seen.add(key);
    if (pageKeys.includes(key)) {
      if (!this.settled && first) this.pageRowsSeen++;
      return 'update';
    }
    if (!firstPage || !first) return 'ignore';
    // A full first page whose rows all came by: this one is further down.
    const older = !this.settled && pageKeys.length === pageSize && this.pageRowsSeen >= pageKeys.length;
    return older ? 'ignore' : 'reload';
  }
}
