// What to do with a row of the application list's event stream. The
// stream sends the rows of the page on screen (the same filters, limit and
// cursor), first all of them, then those that change. A row of the page is
// updated in place. A row the page does not show yet has come into the
// page: a new app, or one moved up because another left; the page must be
// read again.

export type RowAction = 'update' | 'reload' | 'ignore';

export class StreamTracker {
  private seen = new Set<string>();

  /** reset forgets the stream (new filters or page, or a new connection). */
  reset(): void {
    this.seen.clear();
  }

  /** row decides for the row key, given the keys of the page on screen. */
  row(key: string, pageKeys: string[]): RowAction {
    const first = !this.seen.has(key);
    this.seen.add(key);
    if (pageKeys.includes(key)) return 'update';
    // Once is enough: the page read again shows it, or no longer has room.
    return first ? 'reload' : 'ignore';
  }
}
