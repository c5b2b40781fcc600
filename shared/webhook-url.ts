import * as z from 'zod/mini';
import { pydanticIssue } from './pydantic/issues.js';
import { doc } from './schema.js';

/**
 * A webhook URL (docs/events-and-webhooks.md), as pydantic's HttpUrl reads one (`url_parsing`,
 * `url_scheme`): for endpoints and for a crew run's `webhook_url` (E2). What may be
 * reached (https, or http to WEBHOOK_ALLOWED_HOSTS; never link-local, metadata or
 * unspecified addresses; for a run's, nothing internal unless listed) is the URL rules' to
 * say, at creation and when connecting.
 */
export const webhookUrl = (description: string, rules = 'never a link-local, metadata or unspecified address') =>
  doc(
    z.string().check(
      z.maxLength(2048),
      z.url({ abort: true }),
      z.refine((u) => /^https?:$/i.test(new URL(u).protocol), {
        params: pydanticIssue('url_scheme', "URL scheme should be 'http' or 'https'", {
          expected_schemes: "'http' or 'https'",
        }),
      }),
    ),
    `${description}: \`https\`, or \`http\` to a host in WEBHOOK_ALLOWED_HOSTS; ${rules}`,
    { example: 'https://hooks.example.com/dpm' },
  );

/** A crew run's `webhook_url` (E2): any user gives it, so the stricter rules of docs/events-and-webhooks.md. */
export const runWebhookUrl = (description: string) =>
  webhookUrl(
    description,
    'never a loopback, private, carrier-grade NAT, link-local, multicast or unspecified address (in any spelling) unless its host is in WEBHOOK_ALLOWED_HOSTS',
  );
