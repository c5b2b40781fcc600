/**
 * An SDK client with its module, loaded on the first call and shared by the next ones; a
 * failed load is tried again on the next call. How the S3 and SQS clients reach the code
 * that sends with them: a cold start that never sends never loads them. Also how a queue or
 * stream Lambda builds its handler (lambda.ts).
 */
export type Lazy<T> = () => Promise<T>;

export function lazy<T>(load: () => Promise<T>): Lazy<T> {
  let loading: Promise<T> | undefined;
  return () => {
    if (!loading) {
      const attempt = load();
      loading = attempt;
      attempt.catch(() => {
        if (loading === attempt) loading = undefined;
      });
    }
    return loading;
  };
}
