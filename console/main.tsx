/**
 * The review console (docs/reviewing.md): who is signed in, the inbox, decision versions and crew
 * runs. Hash routes (#/inbox, #/decisions/<ws>/<key>/<v>, #/runs, #/runs/<id>) keep the
 * view across reloads and the sign-in round trip; so do those of schedules (#/schedules,
 * #/schedules/<id>), the decisions browser (#/decisions, #/decisions/<ws>,
 * #/decisions/<ws>/<key>) and webhooks (#/webhooks, #/webhooks/<id>, admins).
 */
import { render } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { get, type Me, message } from './api.js';
import { accessToken, completeSignIn, readSettings, signIn, signInFailure, signOut } from './auth.js';
import { DecisionView } from './decision.js';
import { Inbox } from './inbox.js';
import { RunsList, RunView } from './runs.js';
import { DecisionKeyView, DecisionsList } from './decisions.js';
import { ScheduleView, SchedulesList } from './schedules.js';
import { WebhooksList, WebhookView } from './webhooks.js';
import './console.css';

const settings = readSettings();

type Route =
  | { view: 'inbox' }
  | { view: 'decision'; workspace: string; key: string; version: number }
  | { view: 'runs' }
  | { view: 'run'; id: string }
  | { view: 'schedules' }
  | { view: 'schedule'; id: string }
  | { view: 'decisions'; workspace: string | undefined }
  | { view: 'decision-key'; workspace: string; key: string }
  | { view: 'webhooks' }
  | { view: 'webhook'; id: string }
  | { view: 'unknown' };

function route(hash: string): Route {
  // A view's own query (#/runs?status=…) is the view's: the route is the path before it.
  const parts = hash.replace(/^#\/?/, '').replace(/\?.*$/, '').split('/').filter(Boolean).map(decodeURIComponent);
  if (parts.length === 0 || (parts[0] === 'inbox' && parts.length === 1)) return { view: 'inbox' };
  if (parts[0] === 'decisions' && parts.length === 4 && /^\d+$/.test(parts[3]!)) {
    return { view: 'decision', workspace: parts[1]!, key: parts[2]!, version: Number(parts[3]) };
  }
  if (parts[0] === 'runs' && parts.length === 1) return { view: 'runs' };
  if (parts[0] === 'runs' && parts.length === 2) return { view: 'run', id: parts[1]! };
  if (parts[0] === 'schedules' && parts.length === 1) return { view: 'schedules' };
  if (parts[0] === 'schedules' && parts.length === 2) return { view: 'schedule', id: parts[1]! };
  if (parts[0] === 'decisions' && parts.length <= 2) return { view: 'decisions', workspace: parts[1] };
  if (parts[0] === 'decisions' && parts.length === 3)
    return { view: 'decision-key', workspace: parts[1]!, key: parts[2]! };
  if (parts[0] === 'webhooks' && parts.length === 1) return { view: 'webhooks' };
  if (parts[0] === 'webhooks' && parts.length === 2) return { view: 'webhook', id: parts[1]! };
  return { view: 'unknown' };
}

function useHash(): string {
  const [hash, setHash] = useState(location.hash);
  useEffect(() => {
    const changed = () => setHash(location.hash);
    addEventListener('hashchange', changed);
    return () => removeEventListener('hashchange', changed);
  }, []);
  return hash;
}

function Header(props: { signedIn: boolean; me: Me | undefined; meError: string | undefined; current: Route['view'] }) {
  const { me } = props;
  const link = (href: string, label: string, active: boolean) => (
    <a href={href} aria-current={active ? 'page' : undefined}>
      {label}
    </a>
  );
  return (
    <header class="top">
      <p class="brand">DPM review console</p>
      <nav aria-label="Main">
        {props.signedIn && link('#/inbox', 'Inbox', props.current === 'inbox' || props.current === 'decision')}
        {props.signedIn && link('#/runs', 'Runs', props.current === 'runs' || props.current === 'run')}
        {props.signedIn &&
          link('#/schedules', 'Schedules', props.current === 'schedules' || props.current === 'schedule')}
        {props.signedIn &&
          link('#/decisions', 'Decisions', props.current === 'decisions' || props.current === 'decision-key')}
        {props.signedIn &&
          me?.roles.includes('admin') &&
          link('#/webhooks', 'Webhooks', props.current === 'webhooks' || props.current === 'webhook')}
        <a href="/docs">API reference</a>
      </nav>
      <div class="who">
        {me ? (
          <>
            <span id="signed-in">
              Signed in as <strong>{me.name}</strong>{' '}
              <span class="roles">({me.roles.length ? me.roles.join(', ') : 'no roles'})</span>
            </span>
            <button type="button" onClick={() => void signOut(settings)}>
              Sign out
            </button>
          </>
        ) : props.meError ? (
          <span role="alert" class="error">
            {props.meError}
          </span>
        ) : null}
      </div>
    </header>
  );
}

function SignedOut(props: { error: string | undefined }) {
  const [failure, setFailure] = useState<string | undefined>(undefined);
  return (
    <main id="main" tabIndex={-1}>
      <h1>Sign in</h1>
      <p>
        The review console shows what waits for your decision: decision versions to approve and crew runs paused at an
        approval step.
      </p>
      {props.error && (
        <p role="alert" class="error">
          {props.error}
        </p>
      )}
      {failure && (
        <p role="alert" class="error">
          {failure}
        </p>
      )}
      <button
        type="button"
        class="primary"
        id="sign-in"
        disabled={!settings.issuer}
        onClick={() => void signIn(settings).catch((err: unknown) => setFailure(signInFailure(err)))}
      >
        Sign in
      </button>
      {!settings.issuer && (
        <p class="why">Sign-in is not configured: the service has no identity provider (AUTH_ISSUER).</p>
      )}
    </main>
  );
}

function App(props: { signInError: string | undefined }) {
  const hash = useHash();
  const current = route(hash);
  const signedIn = accessToken() !== undefined;
  const [me, setMe] = useState<Me | undefined>(undefined);
  const [meError, setMeError] = useState<string | undefined>(undefined);
  const main = useRef<HTMLElement>(null);

  useEffect(() => {
    if (!signedIn) return;
    get<Me>('/api/me').then(setMe, (err: unknown) => setMeError(message(err)));
  }, [signedIn]);

  // A new view: focus moves to its main region, as a page load would put it.
  const first = useRef(true);
  useEffect(() => {
    if (first.current) {
      first.current = false;
      return;
    }
    main.current?.focus();
  }, [hash]);

  if (!signedIn) {
    document.title = 'Sign in — DPM console';
    return (
      <>
        <Header signedIn={false} me={undefined} meError={undefined} current={current.view} />
        <SignedOut error={props.signInError} />
      </>
    );
  }
  return (
    <>
      <Header signedIn me={me} meError={meError} current={current.view} />
      <main id="main" ref={main} tabIndex={-1}>
        {current.view === 'inbox' && <Inbox />}
        {current.view === 'decision' && (
          <DecisionView key={hash} me={me} workspace={current.workspace} dkey={current.key} version={current.version} />
        )}
        {current.view === 'runs' && <RunsList me={me} />}
        {current.view === 'run' && <RunView key={hash} me={me} id={current.id} />}
        {current.view === 'schedules' && <SchedulesList me={me} />}
        {current.view === 'schedule' && <ScheduleView key={hash} me={me} id={current.id} />}
        {current.view === 'decisions' && <DecisionsList workspace={current.workspace} />}
        {current.view === 'decision-key' && (
          <DecisionKeyView key={hash} workspace={current.workspace} dkey={current.key} />
        )}
        {current.view === 'webhooks' && <WebhooksList me={me} />}
        {current.view === 'webhook' && <WebhookView key={hash} me={me} id={current.id} />}
        {current.view === 'unknown' && (
          <>
            <h1>Not found</h1>
            <p>
              No such view. Go to the <a href="#/inbox">inbox</a>.
            </p>
          </>
        )}
      </main>
    </>
  );
}

async function start(): Promise<void> {
  let signInError: string | undefined;
  try {
    await completeSignIn(settings);
  } catch (err) {
    signInError = signInFailure(err);
  }
  const root = document.getElementById('app')!;
  root.textContent = '';
  render(<App signInError={signInError} />, root);
}

void start();
