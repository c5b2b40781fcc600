import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A local server that answers the OpenAI chat-completions protocol
 * (`POST /v1/chat/completions`), deterministically: the reply names the model and echoes
 * the last user message. A prompt containing "FAIL" gets a 500 error body, "THROTTLE<n>" a 429
 * for its first n requests, "DENY" a 403 quoting the key, "SLOW" no answer; the model
 * `no-such-model` a 404 model_not_found. E12's
 * rephrasing requests are answered as `rephrase` says, asks' SQL as `writeSql` says.
 */
export interface FakeModel {
  readonly baseUrl: string;
  readonly requests: { model: string; messages: { role: string; content: string }[]; authorization?: string }[];
  stop(): Promise<void>;
}

/**
 * E12's rephrasing request (`{"domain", "questions": [{"i", "question", "sql"}]}`): every
 * question reworded as "In plain words: <question>", in a ```json fence as models often
 * answer. A domain containing "GARBLE" gets a reply that is not JSON.
 */
function rephrase(prompt: string): string {
  const request = JSON.parse(prompt) as { domain: string; questions: { i: number; question: string }[] };
  if (request.domain.includes('GARBLE')) return 'Here are some better questions!';
  const questions = request.questions.map(({ i, question }) => ({ i, question: `In plain words: ${question}` }));
  return '```json\n' + JSON.stringify({ questions }) + '\n```';
}

/**
 * An ask's request (POST /api/query/ask: `{"domain", "question", "tables": [{"name"}]}`):
 * `{"sql": "SELECT COUNT(*) AS answer FROM <the first table>"}` in a ```json fence. A
 * question containing "DROP" gets a DROP TABLE of that table, "ELSEWHERE" a bare SELECT of a
 * table outside the domain, "GARBLE" prose.
 */
function writeSql(prompt: string): string {
  const request = JSON.parse(prompt) as { question: string; tables: { name: string }[] };
  const table = request.tables[0]?.name ?? '"none"."none"."none"';
  if (request.question.includes('DROP')) return JSON.stringify({ sql: `DROP TABLE ${table}` });
  if (request.question.includes('ELSEWHERE')) return 'SELECT * FROM "system"."runtime"."nodes"';
  if (request.question.includes('GARBLE')) return 'I would rather not write SQL today.';
  return '```json\n' + JSON.stringify({ sql: `SELECT COUNT(*) AS answer FROM ${table}` }) + '\n```';
}

const completion = (model: string, content: string) => ({
  id: 'chatcmpl-test',
  object: 'chat.completion',
  created: Math.floor(Date.now() / 1000),
  model,
  choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
});

export async function startFakeModel(): Promise<FakeModel> {
  const requests: FakeModel['requests'] = [];
  const throttled = new Map<string, number>();
  const server: Server = createServer((req, res) => {
    let raw = '';
    req.on('data', (chunk) => (raw += chunk));
    req.on('end', () => {
      res.setHeader('content-type', 'application/json');
      if (req.method !== 'POST' || req.url !== '/v1/chat/completions') {
        res.statusCode = 404;
        res.end(JSON.stringify({ error: { message: 'not found' } }));
        return;
      }
      const body = JSON.parse(raw) as { model: string; messages: { role: string; content: string }[] };
      requests.push({ ...body, ...(req.headers.authorization ? { authorization: req.headers.authorization } : {}) });
      const prompt = body.messages.filter((m) => m.role === 'user').at(-1)?.content ?? '';
      const refuse = (status: number, error: Record<string, unknown>, headers: Record<string, string> = {}) => {
        res.writeHead(status, headers);
        res.end(JSON.stringify({ error }));
      };
      // THROTTLE<n>: the first n requests with this prompt are rate limited (429), then it answers.
      const throttle = /THROTTLE(\d)/.exec(prompt);
      if (throttle) {
        const seen = (throttled.get(prompt) ?? 0) + 1;
        throttled.set(prompt, seen);
        if (seen <= Number(throttle[1]))
          return refuse(
            429,
            { message: 'Rate limit reached for requests', type: 'requests', code: 'rate_limit_exceeded' },
            { 'retry-after': '0' },
          );
      }
      if (prompt.includes('DENY'))
        return refuse(403, {
          // Some endpoints quote the key they refused: the adapter must not pass it on.
          message: `Access denied for key ${req.headers.authorization?.replace(/^Bearer /, '') ?? '(none)'}`,
          type: 'permission_error',
        });
      if (body.model === 'no-such-model' || prompt.includes('NOMODEL'))
        return refuse(404, {
          message: 'The model `no-such-model` does not exist or you do not have access to it.',
          type: 'invalid_request_error',
          code: 'model_not_found',
        });
      // SLOW: no answer until the caller gives up.
      if (prompt.includes('SLOW')) return;
      if (prompt.includes('FAIL')) {
        res.statusCode = 500;
        res.end(JSON.stringify({ error: { message: 'model overloaded', type: 'server_error' } }));
        return;
      }
      const system = body.messages.find((m) => m.role === 'system')?.content;
      if (system?.startsWith('You rephrase suggested questions')) {
        res.end(JSON.stringify(completion(body.model, rephrase(prompt))));
        return;
      }
      if (system?.startsWith('You write one SQL query')) {
        res.end(JSON.stringify(completion(body.model, writeSql(prompt))));
        return;
      }
      res.end(
        JSON.stringify({
          id: 'chatcmpl-test',
          object: 'chat.completion',
          created: Math.floor(Date.now() / 1000),
          model: body.model,
          choices: [
            {
              index: 0,
              message: { role: 'assistant', content: `[${body.model}]${system ? `(${system})` : ''} ${prompt}` },
              finish_reason: 'stop',
            },
          ],
          usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
        }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    requests,
    stop: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
