// The three table-server patterns with k6, against the SimpleTableServer sts-examples
// (examples/kustomization.yaml):
//   1. unique logins      READ logins.csv FIRST KEEP=TRUE (the logins rotate, never run out)
//   2. single-use coupons READ coupons.csv FIRST KEEP=FALSE (each coupon handed out once)
//   3. a queue            producers ADD orders-queue LAST, consumers READ FIRST KEEP=FALSE
//
//   k6 run examples/k6/sts-patterns.js                                  # in the cluster
//   k6 run -e STS_HOST=127.0.0.1 -e STS_INIT=true examples/k6/sts-patterns.js   # `make run-sts`
//
// STS_HOST and STS_PORT default to the in-cluster Service (sts-examples:9191). STS_INIT=true
// loads the dataset files with INITFILE first, for a standalone server started on examples/data.
import http from 'k6/http';
import { check, fail, sleep } from 'k6';
import exec from 'k6/execution';

const base = `http://${__ENV.STS_HOST || 'sts-examples'}:${__ENV.STS_PORT || '9191'}/sts`;
const users = Number(__ENV.STS_USERS || 5);
const loops = Number(__ENV.STS_LOOPS || 4);
const queueThreads = Number(__ENV.STS_QUEUE_THREADS || 2);
const queueItems = Number(__ENV.STS_QUEUE_ITEMS || 10);

export const options = {
  scenarios: {
    logins: { executor: 'per-vu-iterations', exec: 'uniqueLogin', vus: users, iterations: loops },
    coupons: { executor: 'per-vu-iterations', exec: 'singleUseCoupon', vus: users, iterations: loops },
    producers: { executor: 'per-vu-iterations', exec: 'produce', vus: queueThreads, iterations: queueItems },
    // Each consumer takes as many orders as each producer adds; maxDuration bounds the wait
    // if producers fail.
    consumers: {
      executor: 'per-vu-iterations', exec: 'consume', vus: queueThreads, iterations: queueItems,
      maxDuration: `${__ENV.STS_QUEUE_TIMEOUT || 60}s`,
    },
  },
  thresholds: { checks: ['rate==1'] },
};

// answer parses the table server's HTML answer: {ok, body}.
function answer(res) {
  const m = /<title>(OK|KO)<\/title>\s*<body>([\s\S]*?)<\/body>/.exec(res.body || '');
  if (!m) {
    return { ok: false, body: `HTTP ${res.status}: ${res.body}` };
  }
  return { ok: m[1] === 'OK', body: m[2].replace(/^Error : /, '') };
}

function get(command, params) {
  const query = Object.entries(params).map(([k, v]) => `${k}=${encodeURIComponent(v)}`).join('&');
  return answer(http.get(`${base}/${command}?${query}`, { tags: { name: command } }));
}

// post sends the parameters as a form, as JMeter's POST does.
function post(command, params) {
  return answer(http.post(`${base}/${command}`, params, { tags: { name: command } }));
}

export function setup() {
  if (__ENV.STS_INIT === 'true') {
    for (const list of ['logins.csv', 'coupons.csv']) {
      const a = get('INITFILE', { FILENAME: list });
      if (!a.ok) fail(`INITFILE ${list}: ${a.body}`);
    }
  }
  for (const list of ['logins.csv', 'coupons.csv']) {
    const a = get('LENGTH', { FILENAME: list });
    if (!a.ok) fail(`${list} is not loaded (${a.body}): apply examples/ or set STS_INIT=true`);
  }
  for (const list of ['orders-queue', 'orders-done', 'used-coupons']) {
    get('RESET', { FILENAME: list });
  }
}

export function uniqueLogin() {
  const a = get('READ', { FILENAME: 'logins.csv', READ_MODE: 'FIRST', KEEP: 'TRUE' });
  const [user, password] = a.body.split(';');
  check(a, { 'login read': (x) => x.ok && user !== '' && password !== undefined });
  // Your application's login request, with user and password, goes here.
}

export function singleUseCoupon() {
  const a = get('READ', { FILENAME: 'coupons.csv', READ_MODE: 'FIRST', KEEP: 'FALSE' });
  if (!a.ok) {
    check(a, { 'coupons ran out': (x) => x.body.startsWith('No more line') });
    return;
  }
  // Stands in for redeeming the coupon. UNIQUE=TRUE fails if a coupon was handed out twice.
  const used = post('ADD', { FILENAME: 'used-coupons', LINE: a.body, ADD_MODE: 'LAST', UNIQUE: 'TRUE' });
  check(used, { 'coupon used once': (x) => x.ok });
}

export function produce() {
  const order = `order-${exec.vu.idInTest}-${exec.vu.iterationInScenario + 1}`;
  check(post('ADD', { FILENAME: 'orders-queue', LINE: order, ADD_MODE: 'LAST' }), { 'order queued': (x) => x.ok });
}

export function consume() {
  for (;;) {
    const a = get('READ', { FILENAME: 'orders-queue', READ_MODE: 'FIRST', KEEP: 'FALSE' });
    if (a.ok) {
      // Stands in for processing the order. UNIQUE=TRUE fails if an order was taken twice.
      const done = post('ADD', { FILENAME: 'orders-done', LINE: a.body, ADD_MODE: 'LAST', UNIQUE: 'TRUE' });
      check(done, { 'order taken once': (x) => x.ok });
      return;
    }
    if (!a.body.startsWith('No more line') && !a.body.endsWith('not loaded yet !')) {
      check(a, { 'queue readable': () => false });
      return;
    }
    sleep(0.02); // the queue is empty for now
  }
}

export function teardown() {
  console.log(`STATUS:\n${get('STATUS', {}).body.replace(/<br \/>/g, '')}`);
}
