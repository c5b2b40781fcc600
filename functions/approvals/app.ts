import * as z from 'zod/mini';
import type { RequestAuthenticator } from '../../shared/auth/authenticator.js';
import { createServiceApp, pageJson, type ServiceApp } from '../../shared/http/service-app.js';
import { Approval, ApprovalsQuery, Me } from './schemas.js';
import type { ApprovalService } from './service.js';

export interface ApprovalsDeps {
  readonly authenticator: RequestAuthenticator;
  readonly service: ApprovalService;
}

const TAGS = ['people in the loop'];

/** `GET /api/me` and the approvers' inbox `GET /api/approvals` (docs/reviewing.md). */
export function createApprovalsApp({ authenticator, service }: ApprovalsDeps): ServiceApp {
  return createServiceApp(authenticator)
    .endpoint(
      {
        name: 'me',
        method: 'get',
        path: '/api/me',
        summary: 'Who the caller is: name, principal, roles and credential',
        tags: TAGS,
        access: 'user',
        success: { status: 200, description: 'The caller', schema: Me },
      },
      (c, { caller }) => c.json(service.me(caller), 200),
    )
    .endpoint(
      {
        name: 'list_approvals',
        method: 'get',
        path: '/api/approvals',
        summary:
          'What the caller may decide now, oldest first: submitted decision versions it neither authored nor submitted (role approver), and waiting crew approval steps of its roles in runs it did not start',
        tags: TAGS,
        access: 'user',
        request: { query: ApprovalsQuery },
        success: {
          status: 200,
          description: 'The inbox; more in `X-Next-Cursor`. A key sees the same list (deciding needs a Bearer session)',
          schema: z.array(Approval),
        },
      },
      async (c, { caller, query }) => pageJson(c, await service.list(caller, query)),
    );
}
