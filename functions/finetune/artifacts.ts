import type { Lazy } from '../../shared/aws/lazy.js';
import type { S3 } from '../../shared/aws/s3.js';
import { Unavailable } from '../../shared/errors.js';
import type { FinetuneJob } from './schemas.js';

/** Where a job's objects live in the artifacts bucket (BUCKETS.artifacts). */
export const jobPrefix = (jobId: string) => `finetune/${jobId}/`;
export const manifestKey = (jobId: string) => `${jobPrefix(jobId)}manifest.json`;

/** The S3 artifact store of fine-tuning jobs: one prefix per job. */
export class ArtifactStore {
  constructor(
    private readonly s3: Lazy<S3>,
    private readonly bucketName: string | undefined,
    /** Keys per ListObjectsV2 page (and so per DeleteObjects call, whose limit is 1000). */
    private readonly pageSize = 1000,
  ) {}

  /** Writes the job's manifest: the job as JSON. */
  async writeManifest(job: FinetuneJob): Promise<void> {
    const { sdk, client } = await this.s3();
    await client.send(
      new sdk.PutObjectCommand({
        Bucket: this.bucket(),
        Key: manifestKey(job.id),
        Body: JSON.stringify(job),
        ContentType: 'application/json',
      }),
    );
  }

  /** Deletes every object under the job's prefix, page by page; returns how many. */
  async deleteAll(jobId: string): Promise<number> {
    const bucket = this.bucket();
    const { sdk, client } = await this.s3();
    let deleted = 0;
    let token: string | undefined;
    do {
      const page = await client.send(
        new sdk.ListObjectsV2Command({
          Bucket: bucket,
          Prefix: jobPrefix(jobId),
          MaxKeys: this.pageSize,
          ContinuationToken: token,
        }),
      );
      const keys = (page.Contents ?? []).flatMap((o) => (o.Key ? [{ Key: o.Key }] : []));
      if (keys.length > 0) {
        const out = await client.send(
          new sdk.DeleteObjectsCommand({ Bucket: bucket, Delete: { Objects: keys, Quiet: true } }),
        );
        // DeleteObjects answers 200 even when some keys failed; the job must stay then.
        if (out.Errors?.length) throw new Unavailable('The artifact store did not delete every object of the job');
        deleted += keys.length;
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
    return deleted;
  }

  private bucket(): string {
    if (!this.bucketName) throw new Unavailable('The artifacts bucket is not configured');
    return this.bucketName;
  }
}
