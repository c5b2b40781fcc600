import { describe, expect, it } from 'vitest';
import type { Template } from 'aws-cdk-lib/assertions';
import type { StageName } from '../../infra/aws/stages.js';
import { resources, withStubHandlers, type Resource, type Statement } from './support.js';

/**
 * A reviewable picture of what each stage's stacks give every Lambda: its name, memory,
 * timeout, reserved concurrency, environment names, event sources, routes and the exact
 * statements of its role. A refactoring that renames or moves code shows here only as
 * the renames it intends (the snapshot's diff in review); anything else is a change of
 * what is deployed and must be deliberate.
 */
const { synthesizeOnce } = withStubHandlers();

/** CloudFormation references as readable strings, so logical ids show instead of nested objects. */
function readable(value: unknown, names: ReadonlyMap<string, string>): unknown {
  if (Array.isArray(value)) return value.map((v) => readable(v, names));
  if (value === null || typeof value !== 'object') return value;
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length === 1) {
    const [key, inner] = entries[0]!;
    if (key === 'Ref' && typeof inner === 'string') return `ref:${names.get(inner) ?? inner}`;
    if (key === 'Fn::GetAtt' && Array.isArray(inner)) return `att:${names.get(inner[0]) ?? inner[0]}.${inner[1]}`;
    if (key === 'Fn::ImportValue' && typeof inner === 'string') {
      // Dpm-dev-Stateful:ExportsOutputFnGetAtt<LogicalId><Attribute><hash>: the hash is CDK's.
      return `import:${inner.replace(/^Dpm-[a-z]+-Stateful:ExportsOutput/, '').replace(/[0-9A-F]{8}$/, '')}`;
    }
    if (key === 'Fn::Join' && Array.isArray(inner)) {
      return (inner[1] as unknown[])
        .map((part) => (typeof part === 'string' ? part : `{${readable(part, names)}}`))
        .join(inner[0]);
    }
  }
  return Object.fromEntries(entries.map(([k, v]) => [k, readable(v, names)]));
}

function namesAndGrants(t: Template): Record<string, unknown> {
  const functions = resources(t, 'AWS::Lambda::Function');
  // Logical ids carry CDK's hashes; a function is named by its FunctionName.
  const names = new Map<string, string>();
  for (const [id, fn] of functions) names.set(id, `fn:${fn.Properties.FunctionName}`);
  for (const [id, fn] of functions) names.set(fn.Properties.Role['Fn::GetAtt'][0], `role:${names.get(id)!.slice(3)}`);
  const policies = resources(t, 'AWS::IAM::Policy');
  const mappings = resources(t, 'AWS::Lambda::EventSourceMapping');
  const integrations = new Map(
    resources(t, 'AWS::ApiGatewayV2::Integration').map(([id, i]) => [id, readable(i.Properties.IntegrationUri, names)]),
  );
  const routes = resources(t, 'AWS::ApiGatewayV2::Route')
    .map(
      ([, r]) =>
        `${r.Properties.RouteKey} → ${String(r.Properties.Target?.['Fn::Join']?.[1]?.[1]?.Ref ? integrations.get(r.Properties.Target['Fn::Join'][1][1].Ref) : '')}`,
    )
    .sort();
  const described = functions
    .map(([id, fn]: [string, Resource]) => {
      const roleId = fn.Properties.Role['Fn::GetAtt'][0];
      const statements = policies
        .filter(([, p]) => JSON.stringify(p.Properties.Roles).includes(`"${roleId}"`))
        .flatMap(([, p]) => p.Properties.PolicyDocument.Statement as Statement[])
        .map((s) => JSON.stringify(readable(s, names)))
        .sort();
      const sources = mappings
        .filter(([, m]) => m.Properties.FunctionName?.Ref === id)
        .map(([, m]) => JSON.stringify(readable({ ...m.Properties, FunctionName: undefined }, names)))
        .sort();
      return {
        name: fn.Properties.FunctionName as string,
        memory: fn.Properties.MemorySize,
        timeout: fn.Properties.Timeout,
        reserved: fn.Properties.ReservedConcurrentExecutions,
        environment: Object.fromEntries(
          Object.entries((fn.Properties.Environment?.Variables ?? {}) as Record<string, unknown>)
            .sort(([a], [b]) => a.localeCompare(b))
            .map(([k, v]) => [k, readable(v, names)]),
        ),
        sources,
        statements,
      };
    })
    .sort((a, b) => a.name.localeCompare(b.name));
  const alarms = resources(t, 'AWS::CloudWatch::Alarm')
    .map(([, a]) => String(a.Properties.AlarmName ?? a.Properties.AlarmDescription ?? ''))
    .sort();
  // Every resource by logical id: CloudFormation replaces a resource whose id changes (a new
  // API URL, a new queue), so a refactoring of the stacks' code must keep them.
  const logicalIds = Object.entries(t.toJSON().Resources as Record<string, { Type: string }>)
    .map(([id, r]) => `${r.Type} ${id}`)
    .sort();
  return { functions: described, routes, alarms, logicalIds };
}

/** The stateful stack's tables and queues by logical id: a changed id would replace the resource (and lose its data). */
function statefulNames(t: Template): Record<string, unknown> {
  const named = (type: string, property: string) =>
    resources(t, type)
      .map(([id, r]) => `${id} → ${JSON.stringify(r.Properties[property] ?? null)}`)
      .sort();
  return {
    tables: named('AWS::DynamoDB::Table', 'TableName'),
    queues: named('AWS::SQS::Queue', 'QueueName'),
    logicalIds: Object.entries(t.toJSON().Resources as Record<string, { Type: string }>)
      .map(([id, r]) => `${r.Type} ${id}`)
      .sort(),
    buckets: resources(t, 'AWS::S3::Bucket')
      .map(([id]) => id)
      .sort(),
  };
}

describe('names and grants of the synthesized stacks', () => {
  for (const stage of ['dev', 'prod'] as const satisfies readonly StageName[]) {
    it(`${stage}: matches the reviewed snapshot`, async () => {
      const { stateful, stateless } = synthesizeOnce(stage);
      const picture = { stateful: statefulNames(stateful), stateless: namesAndGrants(stateless) };
      await expect(JSON.stringify(picture, null, 1) + '\n').toMatchFileSnapshot(
        `__snapshots__/names-and-grants.${stage}.json`,
      );
    });
  }
});
