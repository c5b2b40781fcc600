/** `arn:aws:dynamodb:<region>:<account>:table/<name>/stream/<label>` → `<name>` */
export function tableOfStream(arn: string | undefined): string | undefined {
  return arn?.match(/:table\/([^/]+)\/stream\//)?.[1];
}
