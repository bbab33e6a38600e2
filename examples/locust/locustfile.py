"""The four table-server patterns with Locust, against the SimpleTableServer sts-examples
(examples/kustomization.yaml):

1. unique logins       READ logins.csv FIRST KEEP=TRUE (the logins rotate, never run out)
2. single-use coupons  READ coupons.csv FIRST KEEP=FALSE (each coupon handed out once)
3. a queue             producers ADD orders-queue LAST, consumers READ FIRST KEEP=FALSE
4. leased vouchers     READ vouchers.csv LEASE=<ms>, then ACK once the checkout went through,
                       RELEASE when it failed (every STS_LEASE_FAIL_EVERY-th, default 3), EXTEND
                       when it takes long; a voucher never acknowledged comes back by itself

    locust -f examples/locust/locustfile.py --headless -u 10 -r 10 -t 30s
    STS_INIT=true locust -f examples/locust/locustfile.py --host http://127.0.0.1:9191 ...

The host defaults to the in-cluster Service, http://sts-examples:9191 (STS_HOST and STS_PORT
change it; --host wins). STS_INIT=true loads the dataset files with INITFILE first, for a
standalone server started on examples/data (`make run-sts`).
"""

import logging
import os
import re
import time
import uuid

from locust import HttpUser, between, events, task
from locust.exception import StopUser
from requests import Session

ANSWER = re.compile(r"<title>(OK|KO)</title>\s*<body>(.*?)</body>", re.S)


def answer(response):
    """Parses the table server's HTML answer into (ok, body)."""
    m = ANSWER.search(response.text or "")
    if not m:
        return False, f"HTTP {response.status_code}: {response.text}"
    return m.group(1) == "OK", m.group(2).removeprefix("Error : ")


def call(client, command, method="GET", **params):
    """Calls /sts/<command> and returns (ok, body, response); POST sends the parameters as a
    form, as JMeter does."""
    with client.request(
        method,
        f"/sts/{command}",
        params=params if method == "GET" else None,
        data=params if method == "POST" else None,
        name=command,
        catch_response=True,
    ) as response:
        ok, body = answer(response)
        response.success()  # the caller decides what a KO means
        return ok, body, response


def sts(client, command, method="GET", **params):
    """Calls /sts/<command> and returns (ok, body)."""
    ok, body, _ = call(client, command, method, **params)
    return ok, body


class StsUser(HttpUser):
    abstract = True
    host = f"http://{os.environ.get('STS_HOST', 'sts-examples')}:{os.environ.get('STS_PORT', '9191')}"
    wait_time = between(0.01, 0.05)

    def expect(self, ok, body, what):
        """Records a failed expectation as a Locust failure."""
        if not ok:
            events.request.fire(
                request_type="CHECK", name=what, response_time=0, response_length=0,
                exception=AssertionError(body), context={},
            )


@events.test_start.add_listener
def check_lists(environment, **_):
    """Loads (STS_INIT=true) and checks the datasets, and empties the queue lists; stops the run
    when a dataset is missing."""
    s = Session()
    base = (environment.host or StsUser.host) + "/sts"

    def each_dataset(command, failure):
        """Sends command for each dataset; at the first KO logs failure (the name, the answer)
        and stops the run."""
        for name in ("logins.csv", "coupons.csv", "vouchers.csv"):
            ok, body = answer(s.get(f"{base}/{command}", params={"FILENAME": name}))
            if not ok:
                logging.error(failure, name, body)
                environment.runner.quit()
                return False
        return True

    if os.environ.get("STS_INIT") == "true" and not each_dataset("INITFILE", "INITFILE %s: %s"):
        return
    if not each_dataset("LENGTH", "%s is not loaded (%s): apply examples/ or set STS_INIT=true"):
        return
    for name in ("orders-queue", "orders-done", "used-coupons", "used-vouchers"):
        s.get(f"{base}/RESET", params={"FILENAME": name})


class UniqueLoginUser(StsUser):
    """READ KEEP=TRUE: users running at the same time get different logins."""

    @task
    def login(self):
        ok, body = sts(self.client, "READ", FILENAME="logins.csv", READ_MODE="FIRST", KEEP="TRUE")
        self.expect(ok and ";" in body, body, "login read")
        # Your application's login request, with body.split(";"), goes here.


class CouponUser(StsUser):
    """READ KEEP=FALSE: each coupon is handed out once; stops when they run out."""

    @task
    def redeem(self):
        ok, body = sts(self.client, "READ", FILENAME="coupons.csv", READ_MODE="FIRST", KEEP="FALSE")
        if not ok:
            self.expect(body.startswith("No more line"), body, "coupons ran out")
            raise StopUser()
        # Stands in for redeeming it; UNIQUE=TRUE fails if a coupon was handed out twice.
        ok, body = sts(self.client, "ADD", "POST", FILENAME="used-coupons", LINE=body, ADD_MODE="LAST", UNIQUE="TRUE")
        self.expect(ok, body, "coupon used once")


class ProducerUser(StsUser):
    """ADD LAST: appends orders to the queue."""

    @task
    def produce(self):
        order = f"order-{id(self)}-{time.monotonic_ns()}"
        ok, body = sts(self.client, "ADD", "POST", FILENAME="orders-queue", LINE=order, ADD_MODE="LAST")
        self.expect(ok, body, "order queued")


class ConsumerUser(StsUser):
    """READ FIRST KEEP=FALSE: takes the oldest order; waits while the queue is empty."""

    @task
    def consume(self):
        ok, body = sts(self.client, "READ", FILENAME="orders-queue", READ_MODE="FIRST", KEEP="FALSE")
        if not ok:
            self.expect(body.startswith("No more line") or body.endswith("not loaded yet !"), body, "queue readable")
            return
        # Stands in for processing it; UNIQUE=TRUE fails if an order was taken twice.
        ok, body = sts(self.client, "ADD", "POST", FILENAME="orders-done", LINE=body, ADD_MODE="LAST", UNIQUE="TRUE")
        self.expect(ok, body, "order taken once")


class LeasedVoucherUser(StsUser):
    """READ with LEASE: the voucher leaves the list but is only held; ACK uses it up once the
    checkout went through, RELEASE gives it back at once when the checkout failed, EXTEND buys
    time for a slow one. A user that dies mid-checkout loses no voucher: its lease runs out and
    the voucher goes back to the front of the list. Stops when the vouchers run out."""

    lease_ms = 30000
    fail_every = int(os.environ.get("STS_LEASE_FAIL_EVERY", "3"))  # 0: no checkout fails
    slow_every = 4  # these checkouts take long and extend the lease first

    def on_start(self):
        self.checkouts = 0

    @task
    def checkout(self):
        # REQUEST_ID: a retry after a lost answer gets the same voucher and lease, not a second one.
        request_id = str(uuid.uuid4())
        for _ in range(2):
            ok, body, response = call(self.client, "READ", FILENAME="vouchers.csv", READ_MODE="FIRST",
                                      LEASE=self.lease_ms, REQUEST_ID=request_id)
            if response.status_code:  # 0: no answer came
                break
        if not ok:
            self.expect(body.startswith("No more line"), body, "vouchers ran out")
            raise StopUser()
        voucher, lease = body, response.headers.get("X-STS-Lease")
        self.expect(lease is not None, "no X-STS-Lease header", "voucher leased")
        if lease is None:
            return
        self.checkouts += 1
        if self.checkouts % self.slow_every == 0:
            ok, body = sts(self.client, "EXTEND", LEASE=lease, LEASE_MS=2 * self.lease_ms)
            self.expect(ok, body, "lease extended")
            time.sleep(0.05)  # the slow checkout
        if self.fail_every and self.checkouts % self.fail_every == 0:
            ok, body = sts(self.client, "RELEASE", LEASE=lease)
            self.expect(ok, body, "voucher released")
            return
        # Stands in for the checkout; UNIQUE=TRUE fails if a voucher was used twice.
        ok, body = sts(self.client, "ADD", "POST", FILENAME="used-vouchers", LINE=voucher, ADD_MODE="LAST", UNIQUE="TRUE")
        self.expect(ok, body, "voucher used once")
        ok, body = sts(self.client, "ACK", LEASE=lease)
        self.expect(ok, body, "lease acknowledged")
