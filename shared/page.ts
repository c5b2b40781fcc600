/**
 * One page of a list (lists page with `limit` and `cursor`, as every list does): what services and stores hand each other,
 * whatever the storage; shared/aws/pagination.ts makes them from DynamoDB Queries.
 */
export interface Page<T> {
  items: T[];
  /** Only when more items remain (never after a page that happens to be exactly full). */
  nextCursor: string | undefined;
}
