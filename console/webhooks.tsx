/**
 * Webhook endpoints (docs/events-and-webhooks.md, admins): each with its latest delivery, and one endpoint's
 * deliveries, newest first, to redeliver. The console never reads a signing secret: the
 * service shows one only in the answer that makes it.
 */
import { useEffect, useState } from 'preact/hooks';
import {
  DELIVERY_STATUSES,
  get,
  isAdmin,
  type Me,
  message,
  post,
  seg,
  type WebhookDelivery,
  type WebhookEndpoint,
} from './api.js';
import { Notice, When } from './format.js';
import { More, usePaged } from './paged.js';

const PAGE = 50;
/** While a delivery shown is under way, the page reads the deliveries again this often. */
const REFRESH_MS = 2_000;
/** A retry due further ahead than this is not waited for on the page (Refresh reads it). */
const SOON_MS = 60_000;

/** Whether the delivery's next attempt is under way or due soon. */
const underWay = (d: WebhookDelivery) =>
  d.status === 'pending' ||
  (d.status === 'retrying' && d.next_attempt_at !== null && Date.parse(d.next_attempt_at) - Date.now() < SOON_MS);

function NotAdmin() {
  return (
    <>
      <h1 id="webhooks-title">Webhooks</h1>
      <p class="why">Webhook endpoints are for admins: you do not hold the admin role.</p>
    </>
  );
}

function DeliveryStatus({ delivery }: { delivery: WebhookDelivery }) {
  return <span class={`status status-${delivery.status}`}>{delivery.status}</span>;
}

function EndpointState({ endpoint }: { endpoint: WebhookEndpoint }) {
  return endpoint.enabled ? (
    <span class="status status-enabled">enabled</span>
  ) : (
    <>
      <span class="status status-disabled">disabled</span>
      {endpoint.disabled_reason && <span class="sub">{endpoint.disabled_reason}</span>}
    </>
  );
}

/** An endpoint's newest delivery, read for its row. */
function Latest({ id }: { id: string }) {
  const [latest, setLatest] = useState<WebhookDelivery | null | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);
  useEffect(() => {
    get<WebhookDelivery[]>(`/api/webhooks/${seg(id)}/deliveries?limit=1`).then(
      (list) => setLatest(list[0] ?? null),
      (err: unknown) => setError(message(err)),
    );
  }, [id]);
  if (error) return <span class="error">{error}</span>;
  if (latest === undefined) return <span aria-busy="true">…</span>;
  if (latest === null) return <span class="none">none yet</span>;
  return (
    <>
      <DeliveryStatus delivery={latest} /> <span class="sub">{latest.event_type}</span>
      {latest.last_attempt_at && (
        <span class="sub">
          <When at={latest.last_attempt_at} />
        </span>
      )}
    </>
  );
}

export function WebhooksList(props: { me: Me | undefined }) {
  const admin = isAdmin(props.me);
  const list = usePaged<WebhookEndpoint>(admin ? '/api/webhooks' : undefined, PAGE);
  const endpoints = list.items;
  document.title = 'Webhooks — DPM console';

  if (props.me === undefined) return <p aria-busy="true">Loading…</p>;
  if (!admin)
    return (
      <section aria-labelledby="webhooks-title" data-view="webhooks">
        <NotAdmin />
      </section>
    );
  return (
    <section aria-labelledby="webhooks-title" data-view="webhooks">
      <h1 id="webhooks-title">Webhooks</h1>
      <p class="lead">The endpoints events are delivered to, oldest first, each with its latest delivery.</p>
      <Notice error={list.error} />
      {endpoints === undefined ? (
        <p aria-busy="true">Loading…</p>
      ) : endpoints.length === 0 ? (
        !list.error && <p class="empty">No webhook endpoints.</p>
      ) : (
        <div class="scroll">
          <table id="webhooks" class="webhooks">
            <caption class="sr-only">Webhook endpoints</caption>
            <thead>
              <tr>
                <th scope="col">Endpoint</th>
                <th scope="col">Events</th>
                <th scope="col">Status</th>
                <th scope="col">Latest delivery</th>
              </tr>
            </thead>
            <tbody>
              {endpoints.map((e) => (
                <tr key={e.id}>
                  <th scope="row">
                    <a href={`#/webhooks/${seg(e.id)}`}>
                      <code class="url">{e.url}</code>
                    </a>
                    {e.description && <span class="sub">{e.description}</span>}
                  </th>
                  <td>{e.event_types.join(', ')}</td>
                  <td>
                    <EndpointState endpoint={e} />
                  </td>
                  <td>
                    <Latest id={e.id} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <More list={list} />
    </section>
  );
}

type StatusFilter = '' | WebhookDelivery['status'];

/** The last attempt: its answer or why it failed, and how long it took. */
function Attempt({ d }: { d: WebhookDelivery }) {
  if (!d.last_attempt_at) return <span class="none">not tried yet</span>;
  return (
    <>
      <When at={d.last_attempt_at} />
      <span class="sub">
        {d.last_response_status !== null ? `answered ${d.last_response_status}` : 'no answer'}
        {d.duration_ms !== null && `, ${d.duration_ms} ms`}
      </span>
      {d.last_error && d.last_error !== `the endpoint answered ${d.last_response_status}` && (
        <span class="sub error-text">{d.last_error}</span>
      )}
    </>
  );
}

export function WebhookView(props: { me: Me | undefined; id: string }) {
  const path = `/api/webhooks/${seg(props.id)}`;
  const [endpoint, setEndpoint] = useState<WebhookEndpoint | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);
  const [status, setStatus] = useState<StatusFilter>('');
  const [outcome, setOutcome] = useState<{ error?: string; done?: string }>({});
  const [busy, setBusy] = useState<string | undefined>(undefined);
  const admin = isAdmin(props.me);
  const list = usePaged<WebhookDelivery>(
    admin ? `${path}/deliveries${status ? `?${new URLSearchParams({ status })}` : ''}` : undefined,
    PAGE,
  );
  const deliveries = list.items;
  document.title = `Webhook ${endpoint?.url ?? props.id} — DPM console`;

  useEffect(() => {
    if (admin) get<WebhookEndpoint>(path).then(setEndpoint, (err: unknown) => setError(message(err)));
  }, [path, admin]);

  // While a delivery is under way, its attempts are read again until it settles.
  const open = deliveries?.some(underWay) === true;
  useEffect(() => {
    if (!open) return;
    const timer = setTimeout(list.refresh, REFRESH_MS);
    return () => clearTimeout(timer);
  }, [deliveries, open]);

  const redeliver = async (d: WebhookDelivery) => {
    setBusy(d.id);
    setOutcome({});
    try {
      const after = await post<WebhookDelivery>(`${path}/deliveries/${seg(d.id)}/redeliver`);
      list.update((all) => all.map((x) => (x.id === after.id ? after : x)));
      setOutcome({ done: `Delivery of ${d.event_type} (${d.event_id}) queued again: a new series of attempts.` });
    } catch (err) {
      setOutcome({ error: `Redeliver ${d.event_type}: ${message(err)}` });
    } finally {
      setBusy(undefined);
    }
  };

  if (props.me === undefined) return <p aria-busy="true">Loading…</p>;
  if (!admin)
    return (
      <section aria-labelledby="webhooks-title" data-view="webhook">
        <NotAdmin />
      </section>
    );
  const back = (
    <p class="back">
      <a href="#/webhooks">← Webhooks</a>
    </p>
  );
  if (error)
    return (
      <section aria-labelledby="webhook-title">
        {back}
        <h1 id="webhook-title">Webhook {props.id}</h1>
        <Notice error={error} />
      </section>
    );
  if (!endpoint) return <p aria-busy="true">Loading the webhook…</p>;

  return (
    <section aria-labelledby="webhook-title" data-view="webhook">
      {back}
      <h1 id="webhook-title">
        Webhook <code class="url">{endpoint.url}</code>
      </h1>
      <dl class="facts">
        <dt>Status</dt>
        <dd>
          <EndpointState endpoint={endpoint} />
        </dd>
        {endpoint.description && (
          <>
            <dt>Description</dt>
            <dd>{endpoint.description}</dd>
          </>
        )}
        <dt>Events</dt>
        <dd>{endpoint.event_types.join(', ')}</dd>
        <dt>Created by</dt>
        <dd>
          {endpoint.created_by}, <When at={endpoint.created_at} />
        </dd>
        <dt>Endpoint id</dt>
        <dd>
          <code>{endpoint.id}</code>
        </dd>
      </dl>

      <section aria-labelledby="deliveries-title">
        <h2 id="deliveries-title">Deliveries</h2>
        <p class="lead">Newest first. A redelivery sends the event again, as a new series of attempts.</p>
        <div class="filters">
          <label for="delivery-status">Status</label>
          <select
            id="delivery-status"
            value={status}
            onChange={(e) => setStatus(e.currentTarget.value as StatusFilter)}
          >
            <option value="">Every status</option>
            {DELIVERY_STATUSES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
          <button type="button" disabled={list.loading} onClick={list.refresh}>
            Refresh
          </button>
        </div>
        <Notice error={list.error} />
        <Notice {...outcome} />
        {deliveries === undefined ? (
          <p aria-busy="true">Loading…</p>
        ) : deliveries.length === 0 ? (
          !list.error && <p class="empty">{status ? `No ${status} deliveries.` : 'No deliveries yet.'}</p>
        ) : (
          <div class="scroll">
            <table id="deliveries" class="deliveries" aria-live="polite">
              <caption class="sr-only">Deliveries to {endpoint.url}, newest first</caption>
              <thead>
                <tr>
                  <th scope="col">Event</th>
                  <th scope="col">Status</th>
                  <th scope="col">Attempts</th>
                  <th scope="col">Last attempt</th>
                  <th scope="col">Next attempt</th>
                  {endpoint.enabled && <th scope="col">Action</th>}
                </tr>
              </thead>
              <tbody>
                {deliveries.map((d) => (
                  <tr key={d.id}>
                    <th scope="row">
                      {d.event_type}
                      <code class="sub">{d.event_id}</code>
                    </th>
                    <td>
                      <DeliveryStatus delivery={d} />
                    </td>
                    <td>{d.attempts}</td>
                    <td>
                      <Attempt d={d} />
                    </td>
                    <td>{d.next_attempt_at ? <When at={d.next_attempt_at} /> : <span class="none">—</span>}</td>
                    {endpoint.enabled && (
                      <td>
                        <button
                          type="button"
                          class="small"
                          disabled={busy !== undefined}
                          onClick={() => void redeliver(d)}
                        >
                          Redeliver
                          <span class="sr-only">
                            {' '}
                            {d.event_type} {d.event_id}
                          </span>
                        </button>
                      </td>
                    )}
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
        {!endpoint.enabled && <p class="why">The endpoint is disabled: enable it to redeliver.</p>}
        <More list={list} />
      </section>
    </section>
  );
}
