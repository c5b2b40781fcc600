import type { PolicyValidationPluginReport } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import type { IConstruct } from 'constructs';

/**
 * cdk-nag (the AwsSolutions pack) over the stacks: `infra/aws/app.ts` registers it, so a
 * synth with an unacknowledged finding fails, and `test/infra/nag.test.ts` runs it over dev
 * and prod. Findings are acknowledged next to the construct that causes them, each with its
 * reason: with `Validations.of(construct).acknowledge({ id, reason })` when the finding's id
 * is known when the construct is made, with `acknowledgeFindings` when it names a
 * cross-stack reference that only synthesis resolves (`Resource::Dpm-prod-Stateful:Exports…/finetune/*`).
 */

/** The metadata type acknowledgeFindings records (the tests read acknowledgments by it). */
export const FINDINGS_KEY = 'dpm:nag-acknowledged-findings';

export interface FindingsAcknowledgment {
  /** The rule, without a finding: `AwsSolutions-IAM5`. */
  readonly rule: string;
  /** The findings acknowledged (the text between the brackets of `AwsSolutions-IAM5[…]`). */
  readonly finding: RegExp;
  readonly reason: string;
}

/** Acknowledges, on the construct and what it contains, every finding of the rule that matches. */
export function acknowledgeFindings(scope: IConstruct, ack: FindingsAcknowledgment): void {
  scope.node.addMetadata(FINDINGS_KEY, { rule: ack.rule, finding: ack.finding.source, reason: ack.reason });
}

/** The acknowledgments of the construct and its ancestors. */
function acknowledgmentsOf(construct: IConstruct): { rule: string; finding: RegExp; reason: string }[] {
  const found = [];
  for (let current: IConstruct | undefined = construct; current; current = current.node.scope) {
    for (const entry of current.node.metadata) {
      if (entry.type !== FINDINGS_KEY) continue;
      const data = entry.data as { rule: string; finding: string; reason: string };
      found.push({ rule: data.rule, finding: new RegExp(data.finding), reason: data.reason });
    }
  }
  return found;
}

const FINDING = /^([^[]+)\[(.*)\]$/s;

/** AwsSolutions, minus the findings acknowledged with acknowledgeFindings. */
export class DpmNagChecks extends AwsSolutionsChecks {
  override validateScope(scope: IConstruct): PolicyValidationPluginReport {
    const report = super.validateScope(scope);
    const byPath = new Map(scope.node.findAll().map((c) => [c.node.path, c] as const));
    const violations = report.violations
      .map((violation) => {
        const match = FINDING.exec(violation.ruleName);
        if (!match) return violation;
        const [, rule, finding] = match as unknown as [string, string, string];
        const violatingResources = violation.violatingResources.filter((resource) => {
          const construct = resource.constructPath === undefined ? undefined : byPath.get(resource.constructPath);
          return !(
            construct && acknowledgmentsOf(construct).some((ack) => ack.rule === rule && ack.finding.test(finding))
          );
        });
        return { ...violation, violatingResources };
      })
      .filter((violation) => violation.violatingResources.length > 0);
    return { ...report, success: violations.length === 0, violations };
  }
}
