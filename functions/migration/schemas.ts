import * as z from 'zod/mini';
import { integer } from '../../shared/params.js';
import { PROBE_TYPES } from '../../shared/ports/workflow.js';
import { component, doc } from '../../shared/schema.js';

/** The longest value a configuration or connection text field takes. */
export const MAX_TEXT = 4000;

/** The write-only fields of the configuration: sealed at rest, never in a response. */
export const SECRET_FIELDS = ['objstore_source_secret_key', 'objstore_dest_secret_key'] as const;
export type SecretField = (typeof SECRET_FIELDS)[number];
export const isSecretField = (field: ConfigField): field is SecretField =>
  (SECRET_FIELDS as readonly string[]).includes(field);

/** The pair that is set together or left empty together. */
export const COUNT_FIELDS = ['copy_mappers', 'copy_bandwidth'] as const;
export type CountField = (typeof COUNT_FIELDS)[number];

/**
 * A text field of the update: a string sets it; `""` or null clears it; left out, it
 * stays as it is.
 */
const text = (description: string) =>
  doc(z.optional(z.nullable(z.string().check(z.maxLength(MAX_TEXT)))), `${description}; \`""\` or null clears it`);

/** An integer field of the update: ≥ 1 sets it; `""` or null clears it. */
const count = (description: string) =>
  doc(
    z.optional(z.nullable(z.union([integer().check(z.gte(1)), z.literal('')]))),
    `${description}; an integer ≥ 1; \`""\` or null clears it`,
  );

const secret = (description: string) => text(`${description}; write-only: encrypted at rest and never returned`);

/** Spec 2.4, every field optional (E3 is a partial update). */
export const InfrastructureConfigUpdate = component(
  'InfrastructureConfigUpdate',
  z.strictObject({
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
  }),
);
export type InfrastructureConfigUpdate = z.infer<typeof InfrastructureConfigUpdate>;
export type ConfigField = keyof InfrastructureConfigUpdate;

/** Every field, in the spec's order. */
export const CONFIG_FIELDS = Object.keys(InfrastructureConfigUpdate.shape) as ConfigField[];

const stored = (description: string) => doc(z.nullable(z.string()), `${description}; null when not set`);

/** Spec 2.4 without the write-only fields; null for what is not set. */
export const InfrastructureConfig = component(
  'InfrastructureConfig',
  z.object({
    cluster_ssh_conn_id: stored('workflow connection id of the cluster edge node (SSH)'),
    cluster_edge_temp_path: stored('temporary path on the cluster edge node'),
    migration_compute_conn_id: stored('workflow connection id of the compute cluster (Spark)'),
    migration_smtp_conn_id: stored('workflow connection id of the mail server (SMTP)'),
    objstore_source_endpoint: stored('source object store endpoint'),
    objstore_source_access_key: stored('source object store access key'),
    objstore_dest_endpoint: stored('destination object store endpoint'),
    objstore_dest_access_key: stored('destination object store access key'),
    default_objstore_bucket: stored('default object store bucket'),
    tracking_database: stored('database of the migration tracking tables'),
    tracking_location: stored('location of the migration tracking tables'),
    report_output_location: stored('where migration reports are written'),
    email_recipients: stored('who receives migration reports'),
    copy_mappers: doc(z.nullable(z.int()), 'distributed copy mappers; null when not set'),
    copy_bandwidth: doc(z.nullable(z.int()), 'distributed copy bandwidth per mapper (MB/s); null when not set'),
    fs_user: stored('file system user'),
    fs_ticketfile_location: stored('file system ticket file location'),
    kinit_principal: stored('Kerberos principal'),
    kinit_keytab: stored('Kerberos keytab location'),
    updated_by: doc(z.nullable(z.string()), 'who made the last update; null before the first'),
    updated_at: doc(z.nullable(z.iso.datetime()), 'when; null before the first update'),
  }),
);
export type InfrastructureConfig = z.infer<typeof InfrastructureConfig>;

/** A connection id as Airflow accepts it. */
/** Airflow's connection id characters; `.` and `..` alone are refused: URLs drop them from a path. */
export const CONN_ID =
  /^(?:[A-Za-z0-9_-][A-Za-z0-9_.-]{0,249}|\.[A-Za-z0-9_-][A-Za-z0-9_.-]{0,248}|\.\.[A-Za-z0-9_.-]{1,248})$/;
const connId = () => doc(z.string().check(z.regex(CONN_ID)), 'the connection id', { example: 'cluster_ssh' });

export const ConnectionParams = z.object({ conn_id: connId() });

/** The largest `extra` stored, in bytes of its JSON: well inside one DynamoDB item. */
export const MAX_EXTRA_BYTES = 64 * 1024;

export const ConnectionRequest = component(
  'ConnectionRequest',
  z.strictObject({
    conn_type: doc(z.string().check(z.minLength(1), z.maxLength(250)), 'the connection type', { example: 'ssh' }),
    host: doc(z.string().check(z.maxLength(MAX_TEXT)), 'host name or address (required, at most 4000 characters)', {
      example: 'edge.example.com',
    }),
    port: doc(z.optional(z.nullable(integer().check(z.gte(1), z.lte(65535)))), 'TCP port, 1–65535'),
    schema: doc(
      z.optional(z.nullable(z.string().check(z.maxLength(MAX_TEXT)))),
      "the connection's `schema` field as Airflow has it (e.g. a database; for an `s3` probe the bucket), at most 4000 characters",
    ),
    login: doc(z.optional(z.nullable(z.string().check(z.maxLength(MAX_TEXT)))), 'user name, at most 4000 characters'),
    password: doc(
      z.optional(z.nullable(z.string().check(z.maxLength(MAX_TEXT)))),
      'write-only: encrypted at rest and never returned; left out, the stored one is kept, unless `host` changes: then it is required again (422 `missing`); `""` or null removes it',
    ),
    extra: doc(
      z.optional(z.nullable(z.record(z.string(), z.unknown()))),
      'free-form settings of the connection type (at most 64 KiB as JSON)',
    ),
  }),
);
export type ConnectionRequest = z.infer<typeof ConnectionRequest>;

export const Connection = component(
  'Connection',
  z.object({
    conn_id: doc(z.string(), 'the connection id'),
    conn_type: doc(z.string(), 'the connection type, e.g. `ssh`'),
    host: doc(z.string(), 'host name or address'),
    port: doc(z.nullable(z.int()), 'TCP port; null when not set'),
    schema: doc(z.nullable(z.string()), 'the connection schema; null when not set'),
    login: doc(z.nullable(z.string()), 'user name; null when not set'),
    extra: doc(
      z.nullable(z.record(z.string(), z.unknown())),
      'free-form settings of the connection type; null when not set',
    ),
    created_at: doc(z.iso.datetime(), 'when the connection was created (ISO 8601 UTC)'),
    updated_at: doc(z.iso.datetime(), 'when it was last replaced (ISO 8601 UTC)'),
  }),
);
export type Connection = z.infer<typeof Connection>;

export const ConnectionTestRequest = component(
  'ConnectionTestRequest',
  z.strictObject({
    conn_id: connId(),
    conn_type: doc(
      z._default(z.enum(PROBE_TYPES), 'generic'),
      '`generic` opens a TCP connection to host:port; `ssh` expects an `SSH-` banner; `smtp` expects `220` and answers `EHLO`; `http` expects an answer below 500; `s3` lists the bucket',
    ),
  }),
);
export type ConnectionTestRequest = z.infer<typeof ConnectionTestRequest>;

/** Spec 2.5. */
export const ConnectionTestResult = component(
  'ConnectionTestResult',
  z.object({
    ok: doc(z.boolean(), 'whether the probe succeeded (a failed probe is `ok: false`, not an error)'),
    message: doc(z.string(), 'what the probe found, or why it failed'),
  }),
);
export type ConnectionTestResult = z.infer<typeof ConnectionTestResult>;
