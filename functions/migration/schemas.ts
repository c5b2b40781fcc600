import { z } from '@hono/zod-openapi';
import { integer } from '../../shared/http/params.js';
import { PROBE_TYPES } from '../../shared/ports/workflow.js';

/** The longest value a configuration or connection text field takes. */
export const MAX_TEXT = 4000;

/** The write-only fields of the configuration: sealed at rest, never in a response. */
export const SECRET_FIELDS = ['objstore_source_secret_key', 'objstore_dest_secret_key'] as const;
export type SecretField = (typeof SECRET_FIELDS)[number];

/** The pair that is set together or left empty together. */
export const COUNT_FIELDS = ['copy_mappers', 'copy_bandwidth'] as const;
export type CountField = (typeof COUNT_FIELDS)[number];

/**
 * A text field of the update: a string sets it; `""` or null clears it; left out, it
 * stays as it is.
 */
const text = (description: string) =>
  z
    .string()
    .max(MAX_TEXT)
    .nullable()
    .optional()
    .openapi({ description: `${description}; \`""\` or null clears it` });

/** An integer field of the update: ≥ 1 sets it; `""` or null clears it. */
const count = (description: string) =>
  z
    .union([integer().min(1), z.literal('')])
    .nullable()
    .optional()
    .openapi({ description: `${description}; an integer ≥ 1; \`""\` or null clears it` });

const secret = (description: string) => text(`${description}; write-only: encrypted at rest and never returned`);

/** Spec 2.4, every field optional (E3 is a partial update). */
export const InfrastructureConfigUpdate = z
  .strictObject({
    cluster_ssh_conn_id: text('workflow connection id of the cluster edge node (SSH)'),
    cluster_edge_temp_path: text('temporary path on the cluster edge node'),
    migration_compute_conn_id: text('workflow connection id of the compute cluster (Spark)'),
    migration_smtp_conn_id: text('workflow connection id of the mail server (SMTP)'),
    objstore_source_endpoint: text('source object store endpoint'),
    objstore_source_access_key: text('source object store access key'),
    objstore_source_secret_key: secret('source object store secret key'),
    objstore_dest_endpoint: text('destination object store endpoint'),
    objstore_dest_access_key: text('destination object store access key'),
    objstore_dest_secret_key: secret('destination object store secret key'),
    default_objstore_bucket: text('default object store bucket'),
    tracking_database: text('database of the migration tracking tables'),
    tracking_location: text('location of the migration tracking tables'),
    report_output_location: text('where migration reports are written'),
    email_recipients: text('who receives migration reports'),
    copy_mappers: count('distributed copy mappers; set together with copy_bandwidth'),
    copy_bandwidth: count('distributed copy bandwidth per mapper (MB/s); set together with copy_mappers'),
    fs_user: text('file system user'),
    fs_ticketfile_location: text('file system ticket file location'),
    kinit_principal: text('Kerberos principal'),
    kinit_keytab: text('Kerberos keytab location'),
  })
  .openapi('InfrastructureConfigUpdate');
export type InfrastructureConfigUpdate = z.infer<typeof InfrastructureConfigUpdate>;
export type ConfigField = keyof InfrastructureConfigUpdate;

/** Every field, in the spec's order. */
export const CONFIG_FIELDS = Object.keys(InfrastructureConfigUpdate.shape) as ConfigField[];

const stored = () => z.string().nullable();

/** Spec 2.4 without the write-only fields; null for what is not set. */
export const InfrastructureConfig = z
  .object({
    cluster_ssh_conn_id: stored(),
    cluster_edge_temp_path: stored(),
    migration_compute_conn_id: stored(),
    migration_smtp_conn_id: stored(),
    objstore_source_endpoint: stored(),
    objstore_source_access_key: stored(),
    objstore_dest_endpoint: stored(),
    objstore_dest_access_key: stored(),
    default_objstore_bucket: stored(),
    tracking_database: stored(),
    tracking_location: stored(),
    report_output_location: stored(),
    email_recipients: stored(),
    copy_mappers: z.int().nullable(),
    copy_bandwidth: z.int().nullable(),
    fs_user: stored(),
    fs_ticketfile_location: stored(),
    kinit_principal: stored(),
    kinit_keytab: stored(),
    updated_by: z.string().nullable().openapi({ description: 'who made the last update; null before the first' }),
    updated_at: z.iso.datetime().nullable().openapi({ description: 'when; null before the first update' }),
  })
  .openapi('InfrastructureConfig');
export type InfrastructureConfig = z.infer<typeof InfrastructureConfig>;

/** A connection id as Airflow accepts it. */
/** Airflow's connection id characters; `.` and `..` alone are refused: URLs drop them from a path. */
export const CONN_ID =
  /^(?:[A-Za-z0-9_-][A-Za-z0-9_.-]{0,249}|\.[A-Za-z0-9_-][A-Za-z0-9_.-]{0,248}|\.\.[A-Za-z0-9_.-]{1,248})$/;
const connId = () => z.string().regex(CONN_ID).openapi({ description: 'the connection id', example: 'cluster_ssh' });

export const ConnectionParams = z.object({ conn_id: connId() });

/** The largest `extra` stored, in bytes of its JSON: well inside one DynamoDB item. */
export const MAX_EXTRA_BYTES = 64 * 1024;

export const ConnectionRequest = z
  .strictObject({
    conn_type: z.string().min(1).max(250).openapi({ description: 'the connection type', example: 'ssh' }),
    host: z.string().max(MAX_TEXT).openapi({ example: 'edge.example.com' }),
    port: integer().min(1).max(65535).nullable().optional(),
    schema: z.string().max(MAX_TEXT).nullable().optional(),
    login: z.string().max(MAX_TEXT).nullable().optional(),
    password: z.string().max(MAX_TEXT).nullable().optional().openapi({
      description:
        'write-only: encrypted at rest and never returned; left out, the stored one is kept, unless `host` changes: then it is required again (422 `missing`); `""` or null removes it',
    }),
    extra: z
      .record(z.string(), z.unknown())
      .nullable()
      .optional()
      .openapi({ description: 'free-form settings of the connection type (at most 64 KiB as JSON)' }),
  })
  .openapi('ConnectionRequest');
export type ConnectionRequest = z.infer<typeof ConnectionRequest>;

export const Connection = z
  .object({
    conn_id: z.string(),
    conn_type: z.string(),
    host: z.string(),
    port: z.int().nullable(),
    schema: z.string().nullable(),
    login: z.string().nullable(),
    extra: z.record(z.string(), z.unknown()).nullable(),
    created_at: z.iso.datetime(),
    updated_at: z.iso.datetime(),
  })
  .openapi('Connection');
export type Connection = z.infer<typeof Connection>;

export const ConnectionTestRequest = z
  .strictObject({
    conn_id: connId(),
    conn_type: z.enum(PROBE_TYPES).default('generic').openapi({
      description:
        '`generic` opens a TCP connection to host:port; `ssh` expects an `SSH-` banner; `smtp` expects `220` and answers `EHLO`; `http` expects an answer below 500; `s3` lists the bucket',
    }),
  })
  .openapi('ConnectionTestRequest');
export type ConnectionTestRequest = z.infer<typeof ConnectionTestRequest>;

/** Spec 2.5. */
export const ConnectionTestResult = z.object({ ok: z.boolean(), message: z.string() }).openapi('ConnectionTestResult');
export type ConnectionTestResult = z.infer<typeof ConnectionTestResult>;
