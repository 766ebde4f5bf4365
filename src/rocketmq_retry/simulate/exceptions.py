"""The exceptions the simulated listeners throw, printed as the JVM prints them: ``Throwable.printStackTrace`` with
its ``Caused by:`` chain and ``... N more`` (frames shared with the enclosing trace), the library frames each cause
really passes through, and messages whose only differences between messages are values the ingest's cause
fingerprint masks (numbers, quoted values, IPs: ``jobs/ingest/causes.MASKS``). One logical cause of one listener
has one application frame: line numbers belong to the code, not to the message.

Causes by name (docs/DESIGN.md "The simulator", "Failures"):

- outages (a dependency is down): ``db-connection-refused`` (Spring JDBC over HikariCP and MySQL Connector/J),
  ``http-connection-refused`` and ``http-read-timeout`` (an HTTP call to a fixed host:port);
- poison messages (the message itself is bad): ``json`` (the body is not JSON), ``validation`` (Bean Validation
  refuses a field), ``missing-customer`` (an application check);
- throttling: ``throttle`` (the listener's own rate limiter refuses the message).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

from rocketmq_retry.simulate.javanames import FRAMES_CMCS_4X, FRAMES_CMOS, FRAMES_GRPC, FRAMES_SPRING
from rocketmq_retry.simulate.model import GRPC, Lifecycle
from rocketmq_retry.simulate.scenario import OUTAGE_CAUSES, POISON_CAUSES
from rocketmq_retry.simulate.topology import host_stem

THROTTLE_CAUSE = "throttle"


@dataclass(frozen=True)
class Throwable:
    """A Java exception: class, message (``None``: no message; may hold line ends), its frames from the throw
    point down to ``Thread.run`` (``StackTraceElement.toString()``), and its cause."""

    cls: str
    message: str | None
    frames: tuple[str, ...]
    cause: Throwable | None = None

    def __str__(self) -> str:  # Throwable.toString()
        return self.cls if self.message is None else f"{self.cls}: {self.message}"

    @property
    def root(self) -> Throwable:
        t = self
        while t.cause is not None:
            t = t.cause
        return t


def print_stack_trace(t: Throwable) -> list[str]:
    """``Throwable.printStackTrace()``: the exception, ``\\tat`` frames, then each cause as ``Caused by: …`` with
    the frames it does not share (from the bottom) with the exception that wraps it, and ``\\t... N more``. A
    message's line ends stay inside its element (the JVM prints the string as is)."""
    lines = [str(t), *("\tat " + f for f in t.frames)]
    enclosing, cause = t, t.cause
    while cause is not None:
        m, n = len(cause.frames) - 1, len(enclosing.frames) - 1
        while m >= 0 and n >= 0 and cause.frames[m] == enclosing.frames[n]:
            m, n = m - 1, n - 1
        common = len(cause.frames) - 1 - m
        lines.append(f"Caused by: {cause}")
        lines.extend("\tat " + f for f in cause.frames[: m + 1])
        if common:
            lines.append(f"\t... {common} more")
        enclosing, cause = cause, cause.cause
    return lines


# --- library frames (JDK 17, Spring 6 / Spring Boot 3, HikariCP 5, MySQL Connector/J 8, Jackson 2.15) ----------------
J = "java.base/"
NIO_CONNECT = (
    f"{J}sun.nio.ch.Net.pollConnect(Native Method)",
    f"{J}sun.nio.ch.Net.pollConnectNow(Net.java:672)",
    f"{J}sun.nio.ch.NioSocketImpl.timedFinishConnect(NioSocketImpl.java:547)",
    f"{J}sun.nio.ch.NioSocketImpl.connect(NioSocketImpl.java:602)",
    f"{J}java.net.SocksSocketImpl.connect(SocksSocketImpl.java:327)",
    f"{J}java.net.Socket.connect(Socket.java:633)",
)
NIO_READ = (
    f"{J}sun.nio.ch.NioSocketImpl.timedRead(NioSocketImpl.java:288)",
    f"{J}sun.nio.ch.NioSocketImpl.implRead(NioSocketImpl.java:314)",
    f"{J}sun.nio.ch.NioSocketImpl.read(NioSocketImpl.java:355)",
    f"{J}sun.nio.ch.NioSocketImpl$1.read(NioSocketImpl.java:808)",
    f"{J}java.net.Socket$SocketInputStream.read(Socket.java:966)",
    f"{J}java.io.BufferedInputStream.fill(BufferedInputStream.java:244)",
    f"{J}java.io.BufferedInputStream.read1(BufferedInputStream.java:284)",
    f"{J}java.io.BufferedInputStream.read(BufferedInputStream.java:343)",
    f"{J}sun.net.www.http.HttpClient.parseHTTPHeader(HttpClient.java:791)",
    f"{J}sun.net.www.http.HttpClient.parseHTTP(HttpClient.java:726)",
    f"{J}sun.net.www.protocol.http.HttpURLConnection.getInputStream0(HttpURLConnection.java:1688)",
    f"{J}sun.net.www.protocol.http.HttpURLConnection.getInputStream(HttpURLConnection.java:1589)",
    f"{J}java.net.HttpURLConnection.getResponseCode(HttpURLConnection.java:529)",
)
HTTP_CONNECT = (
    *NIO_CONNECT,
    f"{J}sun.net.NetworkClient.doConnect(NetworkClient.java:178)",
    f"{J}sun.net.www.http.HttpClient.openServer(HttpClient.java:533)",
    f"{J}sun.net.www.http.HttpClient.openServer(HttpClient.java:638)",
    f"{J}sun.net.www.http.HttpClient.<init>(HttpClient.java:281)",
    f"{J}sun.net.www.http.HttpClient.New(HttpClient.java:386)",
    f"{J}sun.net.www.protocol.http.HttpURLConnection.getNewHttpClient(HttpURLConnection.java:1320)",
    f"{J}sun.net.www.protocol.http.HttpURLConnection.plainConnect0(HttpURLConnection.java:1253)",
    f"{J}sun.net.www.protocol.http.HttpURLConnection.plainConnect(HttpURLConnection.java:1139)",
    f"{J}sun.net.www.protocol.http.HttpURLConnection.connect(HttpURLConnection.java:1068)",
)
SPRING_HTTP = "org.springframework.http.client."
REST_TEMPLATE_SEND = (
    f"{SPRING_HTTP}SimpleBufferingClientHttpRequest.executeInternal(SimpleBufferingClientHttpRequest.java:75)",
    f"{SPRING_HTTP}AbstractBufferingClientHttpRequest.executeInternal(AbstractBufferingClientHttpRequest.java:48)",
    f"{SPRING_HTTP}AbstractClientHttpRequest.execute(AbstractClientHttpRequest.java:66)",
    "org.springframework.web.client.RestTemplate.doExecute(RestTemplate.java:862)",
)
REST_TEMPLATE_POST = (
    "org.springframework.web.client.RestTemplate.execute(RestTemplate.java:764)",
    "org.springframework.web.client.RestTemplate.postForObject(RestTemplate.java:481)",
)
SPRING_JDBC = "org.springframework.jdbc."
JDBC_GET = (
    f"{SPRING_JDBC}datasource.DataSourceUtils.fetchConnection(DataSourceUtils.java:160)",
    f"{SPRING_JDBC}datasource.DataSourceUtils.doGetConnection(DataSourceUtils.java:118)",
    f"{SPRING_JDBC}datasource.DataSourceUtils.getConnection(DataSourceUtils.java:81)",
)
JDBC_UPDATE = (
    f"{SPRING_JDBC}datasource.DataSourceUtils.getConnection(DataSourceUtils.java:84)",
    f"{SPRING_JDBC}core.JdbcTemplate.execute(JdbcTemplate.java:653)",
    f"{SPRING_JDBC}core.JdbcTemplate.update(JdbcTemplate.java:972)",
    f"{SPRING_JDBC}core.JdbcTemplate.update(JdbcTemplate.java:1016)",
    f"{SPRING_JDBC}core.JdbcTemplate.update(JdbcTemplate.java:1026)",
)
HIKARI = "com.zaxxer.hikari."
HIKARI_WAIT = (
    f"{HIKARI}pool.HikariPool.createTimeoutException(HikariPool.java:696)",
    f"{HIKARI}pool.HikariPool.getConnection(HikariPool.java:181)",
    f"{HIKARI}pool.HikariPool.getConnection(HikariPool.java:146)",
    f"{HIKARI}HikariDataSource.getConnection(HikariDataSource.java:128)",
)
# the pool's connection adder thread, where the connection attempt that failed ran
HIKARI_ADDER = (
    f"{HIKARI}util.DriverDataSource.getConnection(DriverDataSource.java:138)",
    f"{HIKARI}pool.PoolBase.newConnection(PoolBase.java:359)",
    f"{HIKARI}pool.PoolBase.newPoolEntry(PoolBase.java:201)",
    f"{HIKARI}pool.HikariPool.createPoolEntry(HikariPool.java:470)",
    f"{HIKARI}pool.HikariPool$PoolEntryCreator.call(HikariPool.java:733)",
    f"{HIKARI}pool.HikariPool$PoolEntryCreator.call(HikariPool.java:712)",
    f"{J}java.util.concurrent.FutureTask.run(FutureTask.java:264)",
    f"{J}java.util.concurrent.ThreadPoolExecutor.runWorker(ThreadPoolExecutor.java:1136)",
    f"{J}java.util.concurrent.ThreadPoolExecutor$Worker.run(ThreadPoolExecutor.java:635)",
    f"{J}java.lang.Thread.run(Thread.java:840)",
)
MYSQL = "com.mysql.cj."
# A @Transactional service called through its CGLIB proxy, between the throw point and the caller (Spring 6 on JDK
# 17; Spring 5 on JDK 11 names the proxy class "$$EnhancerBySpringCGLIB$$<hash>"). The frames between the service
# method and the proxy's own frame: reflection, then the advice chain of the transaction interceptor.
AOP = "org.springframework.aop."
TX = "org.springframework.transaction.interceptor."
REFLECT_INVOKE = (
    f"{J}jdk.internal.reflect.NativeMethodAccessorImpl.invoke0(Native Method)",
    f"{J}jdk.internal.reflect.NativeMethodAccessorImpl.invoke(NativeMethodAccessorImpl.java:77)",
    f"{J}jdk.internal.reflect.DelegatingMethodAccessorImpl.invoke(DelegatingMethodAccessorImpl.java:43)",
    f"{J}java.lang.reflect.Method.invoke(Method.java:568)",
)
TX_PROXY = (
    f"{AOP}support.AopUtils.invokeJoinpointUsingReflection(AopUtils.java:352)",
    f"{AOP}framework.CglibAopProxy$CglibMethodInvocation.invokeJoinpoint(CglibAopProxy.java:713)",
    f"{AOP}framework.ReflectiveMethodInvocation.proceed(ReflectiveMethodInvocation.java:163)",
    f"{AOP}framework.CglibAopProxy$CglibMethodInvocation.proceed(CglibAopProxy.java:763)",
    f"{TX}TransactionInterceptor$1.proceedWithInvocation(TransactionInterceptor.java:123)",
    f"{TX}TransactionAspectSupport.invokeWithinTransaction(TransactionAspectSupport.java:391)",
    f"{TX}TransactionInterceptor.invoke(TransactionInterceptor.java:119)",
    f"{AOP}framework.ReflectiveMethodInvocation.proceed(ReflectiveMethodInvocation.java:184)",
    f"{AOP}framework.CglibAopProxy$CglibMethodInvocation.proceed(CglibAopProxy.java:763)",
    f"{AOP}framework.CglibAopProxy$DynamicAdvisedInterceptor.intercept(CglibAopProxy.java:708)",
)
MYSQL_OPEN = (
    f"{MYSQL}jdbc.ConnectionImpl.createNewIO(ConnectionImpl.java:829)",
    f"{MYSQL}jdbc.ConnectionImpl.<init>(ConnectionImpl.java:449)",
    f"{MYSQL}jdbc.ConnectionImpl.getInstance(ConnectionImpl.java:242)",
    f"{MYSQL}jdbc.NonRegisteringDriver.connect(NonRegisteringDriver.java:198)",
    *HIKARI_ADDER,
)
MYSQL_LINK_FAILURE = (
    "Communications link failure\n\nThe last packet sent successfully to the server was 0 milliseconds ago. "
    "The driver has not received any packets from the server."
)
JACKSON = "com.fasterxml.jackson."
JACKSON_READ = (
    f"{JACKSON}core.JsonParser._constructError(JsonParser.java:2477)",
    f"{JACKSON}core.json.ReaderBasedJsonParser._reportInvalidToken(ReaderBasedJsonParser.java:3041)",
    f"{JACKSON}core.json.ReaderBasedJsonParser._handleOddValue(ReaderBasedJsonParser.java:2082)",
    f"{JACKSON}core.json.ReaderBasedJsonParser.nextToken(ReaderBasedJsonParser.java:805)",
    f"{JACKSON}databind.ObjectMapper._initForReading(ObjectMapper.java:4912)",
    f"{JACKSON}databind.ObjectMapper._readMapAndClose(ObjectMapper.java:4818)",
    f"{JACKSON}databind.ObjectMapper.readValue(ObjectMapper.java:3772)",
    f"{JACKSON}databind.ObjectMapper.readValue(ObjectMapper.java:3740)",
)
SPRING_CONVERT = (
    "org.springframework.messaging.converter.MappingJackson2MessageConverter.convertFromInternal("
    "MappingJackson2MessageConverter.java:235)",
    "org.springframework.messaging.converter.AbstractMessageConverter.fromMessage(AbstractMessageConverter.java:185)",
    "org.springframework.messaging.converter.AbstractMessageConverter.fromMessage(AbstractMessageConverter.java:176)",
    "org.springframework.messaging.converter.CompositeMessageConverter.fromMessage(CompositeMessageConverter.java:70)",
)
CONTAINER = "org.apache.rocketmq.spring.support.DefaultRocketMQListenerContainer"
CONTAINER_CONVERT = (f"{CONTAINER}.doConvertMessage(DefaultRocketMQListenerContainer.java:504)",)
CONTAINER_CONVERT_CALL = f"{CONTAINER}.handleMessage(DefaultRocketMQListenerContainer.java:398)"

# The generic failures of the ``behaviour`` mix (one per lifecycle, by its id) and the line of the listener that
# throws each: one class, message shape and frame per failure, whatever the message.
BUSINESS_ERRORS = (
    ("java.lang.IllegalStateException", "{svc} unavailable for orderId={order}", 44),
    ("java.net.SocketTimeoutException", "Read timed out calling {svc} for orderId={order}", 51),
    ("org.springframework.dao.DataAccessResourceFailureException", "Unable to acquire JDBC Connection", 66),
    ("java.lang.NullPointerException", 'Cannot invoke "String.length()" because "sku" is null', 85),
)


def _words(group: str) -> list[str]:
    return [w.capitalize() for w in host_stem(group).split("-")]


def _line(*parts: str) -> int:
    """A stable source line for an application frame: the same code, the same line, on every message."""
    return 20 + zlib.crc32("/".join(parts).encode()) % 180


@dataclass(frozen=True)
class Flavour:
    """Where the listener runs: its package and class, the frames below it, and what its framework prints."""

    package: str
    listener: str  # simple name
    method: str  # onMessage (rocketmq-spring), consumeMessage (remoting), consume (gRPC)
    below: tuple[str, ...]  # the client's frames under the listener
    spring: bool
    boot2: bool  # Spring Boot 2 / Spring 5: javax.*, "; nested exception is …" messages
    service: str = ""  # the @Transactional service the listener calls through its proxy ('': it does the work)

    def listener_frame(self, line: int) -> str:
        return f"{self.package}.{self.listener}.{self.method}({self.listener}.java:{line})"

    def calls(self, line: int) -> tuple[str, ...]:
        """The listener's frames at ``line`` and the client's below it; rocketmq-spring calls the typed
        ``onMessage`` through its generic bridge method (the class declaration's line)."""
        bridge = (self.listener_frame(_line(self.listener, "class") % 20 + 12),) if self.spring else ()
        if not self.service:
            return (self.listener_frame(line), *bridge, *self.below)
        # the work is the service's: the throw point is in it, the listener's frame is where it calls the proxy
        svc = f"{self.package}.{self.service}"
        cglib = f"$$EnhancerBySpringCGLIB$${zlib.crc32(svc.encode()):08x}" if self.boot2 else "$$SpringCGLIB$$0"
        return (
            f"{svc}.handle({self.service}.java:{line})",
            *REFLECT_INVOKE,
            *TX_PROXY,
            f"{svc}{cglib}.handle(<generated>)",
            self.listener_frame(_line(self.listener, "service")),
            *bridge,
            *self.below,
        )

    def app(self, cls: str, method: str, *key: str) -> str:
        """A frame of the application's own class ``cls`` (under the listener's package)."""
        simple = cls.rsplit(".", 1)[-1]
        return f"{self.package}.{cls}.{method}({simple}.java:{_line(self.package, cls, method, *key)})"


def flavour_of(lc: Lifecycle) -> Flavour:
    g = lc.group
    package = g.run.package if g.run is not None else "com.example"
    listener = "".join(_words(g.name)) + "Listener"
    spring = g.scenario.app == "spring" and lc.inst.kind != GRPC
    if lc.inst.kind == GRPC:
        method, below = "consume", tuple(FRAMES_GRPC)
    elif spring:
        method, below = "onMessage", tuple(FRAMES_SPRING)
    else:
        method, below = "consumeMessage", tuple(FRAMES_CMOS if g.orderly else FRAMES_CMCS_4X)
    boot2 = spring and g.run is not None and g.run.pattern.name.startswith("boot2")
    service = "".join(_words(g.name)) + "Service" if spring and g.scenario.service_proxy else ""
    return Flavour(package, listener, method, below, spring, boot2, service)


def dependency(group: str, port: int) -> str:
    """The host:port a group's application calls (one fixed address per group and service)."""
    return f"10.0.3.{20 + zlib.crc32(group.encode()) % 200}:{port}"


def event_class(lc: Lifecycle) -> str:
    return "".join(w.capitalize() for w in lc.msg.topic.lower().split("_")) + "Event"


def business_exception(lc: Lifecycle) -> Throwable:
    """A generic failure of the behaviour mix: one of BUSINESS_ERRORS by the lifecycle's id."""
    cls, text, line = BUSINESS_ERRORS[lc.lid % len(BUSINESS_ERRORS)]
    svc = lc.group.scenario.topic.lower().split("_")[0] + "-service"
    return Throwable(cls, text.format(svc=svc, order=lc.msg.order_id), flavour_of(lc).calls(line))


def cause_exception(name: str, lc: Lifecycle) -> Throwable:
    """The exception of cause ``name`` (OUTAGE_CAUSES, POISON_CAUSES, THROTTLE_CAUSE) thrown by ``lc``'s listener."""
    f = flavour_of(lc)
    builder = _BUILDERS.get(name)
    if builder is None:
        raise ValueError(f"no simulated cause {name!r}")
    return builder(f, lc)


def _db_connection_refused(f: Flavour, lc: Lifecycle) -> Throwable:
    """Spring's JdbcTemplate asks HikariCP for a connection; the pool has none (its adder thread cannot connect to
    MySQL) and times out. Without Spring the application asks the pool itself."""
    store = f.app(f"{''.join(_words(lc.group.name))}Store", "save")
    listener = f.calls(_line(f.listener, "db"))
    waited = 30_000 + lc.lid % 23  # the pool's connectionTimeout plus scheduling: a value, masked
    pool_msg = f"HikariPool-1 - Connection is not available, request timed out after {waited}ms."
    refused = Throwable(
        "java.net.ConnectException",
        "Connection refused",
        (
            *NIO_CONNECT,
            f"{MYSQL}protocol.StandardSocketFactory.connect(StandardSocketFactory.java:153)",
            f"{MYSQL}protocol.a.NativeSocketConnection.connect(NativeSocketConnection.java:63)",
            f"{MYSQL}NativeSession.connect(NativeSession.java:121)",
            f"{MYSQL}jdbc.ConnectionImpl.connectOneTryOnly(ConnectionImpl.java:945)",
            *MYSQL_OPEN,
        ),
    )
    link = Throwable(
        f"{MYSQL}exceptions.CJCommunicationsException",
        MYSQL_LINK_FAILURE,
        (
            f"{J}jdk.internal.reflect.NativeConstructorAccessorImpl.newInstance0(Native Method)",
            f"{MYSQL}exceptions.ExceptionFactory.createException(ExceptionFactory.java:61)",
            f"{MYSQL}exceptions.ExceptionFactory.createCommunicationsException(ExceptionFactory.java:151)",
            f"{MYSQL}protocol.a.NativeSocketConnection.connect(NativeSocketConnection.java:79)",
            f"{MYSQL}NativeSession.connect(NativeSession.java:121)",
            f"{MYSQL}jdbc.ConnectionImpl.connectOneTryOnly(ConnectionImpl.java:945)",
            *MYSQL_OPEN,
        ),
        refused,
    )
    comm = Throwable(
        f"{MYSQL}jdbc.exceptions.CommunicationsException",
        MYSQL_LINK_FAILURE,
        (
            f"{MYSQL}jdbc.exceptions.SQLError.createCommunicationsException(SQLError.java:174)",
            f"{MYSQL}jdbc.exceptions.SQLExceptionsMapping.translateException(SQLExceptionsMapping.java:64)",
            *MYSQL_OPEN,
        ),
        link,
    )
    if not f.spring:
        return Throwable("java.sql.SQLTransientConnectionException", pool_msg, (*HIKARI_WAIT, store, *listener), comm)
    pool = Throwable(
        "java.sql.SQLTransientConnectionException", pool_msg, (*HIKARI_WAIT, *JDBC_GET, store, *listener), comm
    )
    top = "Failed to obtain JDBC Connection"
    if f.boot2:  # Spring 5's NestedRuntimeException appends its cause
        top += f"; nested exception is {pool}"
    return Throwable(
        "org.springframework.jdbc.CannotGetJdbcConnectionException", top, (*JDBC_UPDATE, store, *listener), pool
    )


def _http(f: Flavour, lc: Lifecycle, refused: bool) -> Throwable:
    """An HTTP POST to the group's downstream service: refused (nothing listens) or timed out reading the answer.
    Spring applications call it through RestTemplate, the others through HttpURLConnection and wrap the failure
    in their own exception."""
    port = 8080
    addr = dependency(lc.group.name, port)
    svc = lc.group.scenario.topic.lower().split("_")[0]
    url = f"http://{addr}/api/v1/{svc}s/{lc.msg.order_id}"
    client = f"{''.join(w.capitalize() for w in svc.split('-'))}Client"
    listener = f.calls(_line(f.listener, "http"))
    if refused:
        root_cls, root_msg, io = "java.net.ConnectException", "Connection refused", HTTP_CONNECT
        words = "Connection refused"
    else:
        root_cls, root_msg, io = "java.net.SocketTimeoutException", "Read timed out", NIO_READ
        words = "Read timed out"
    if f.spring:
        call = f.app(f"client.{client}", "post")
        io_frames = (*io, *REST_TEMPLATE_SEND, *REST_TEMPLATE_POST, call, *listener)
        top = f'I/O error on POST request for "{url}": {words}'
        if f.boot2:
            top += f"; nested exception is {root_cls}: {root_msg}"
        root = Throwable(root_cls, root_msg, io_frames)
        rest = ("org.springframework.web.client.RestTemplate.doExecute(RestTemplate.java:888)", *REST_TEMPLATE_POST)
        return Throwable("org.springframework.web.client.ResourceAccessException", top, (*rest, call, *listener), root)
    sent = f.app(f"client.{client}", "post", "send")
    root = Throwable(root_cls, root_msg, (*io, sent, *listener))
    return Throwable(
        f"{f.package}.client.{client}Exception",
        f"POST {url} failed: {words}",
        (f.app(f"client.{client}", "post", "wrap"), *listener),
        root,
    )


def _json(f: Flavour, lc: Lifecycle) -> Throwable:
    """The body is not JSON (an old producer's ``key=value`` text): Jackson refuses its first token. rocketmq-spring
    converts the body before the listener runs; a plain listener calls the ObjectMapper itself."""
    body = lc.msg.body.decode("utf-8", errors="replace")
    token = body.split("=", 1)[0]
    parse = Throwable(
        f"{JACKSON}core.JsonParseException",
        f"Unrecognized token '{token}': was expecting (JSON String, Number, Array, Object or token 'null', 'true' or "
        f"'false')\n at [Source: (String)\"{body}\"; line: 1, column: {len(token) + 1}]",
        (*JACKSON_READ, *SPRING_CONVERT, *CONTAINER_CONVERT, CONTAINER_CONVERT_CALL, *f.below[1:])
        if f.spring
        else (*JACKSON_READ, *f.calls(_line(f.listener, "json"))),
    )
    if not f.spring:
        return parse
    conversion = Throwable(
        "org.springframework.messaging.converter.MessageConversionException",
        f"Could not read JSON: {parse.message}",
        (SPRING_CONVERT[0].replace(":235)", ":239)"), *SPRING_CONVERT[1:], *CONTAINER_CONVERT,
         CONTAINER_CONVERT_CALL, *f.below[1:]),
        parse,
    )  # fmt: skip
    return Throwable(
        "java.lang.RuntimeException",
        f"cannot convert message to class {f.package}.{event_class(lc)}",
        (CONTAINER_CONVERT[0].replace(":504)", ":518)"), CONTAINER_CONVERT_CALL, *f.below[1:]),
        conversion,
    )


def _validation(f: Flavour, lc: Lifecycle) -> Throwable:
    """Bean Validation refuses the event (``amount`` must be positive): the application's validator throws."""
    package = "javax" if (f.boot2 or not f.spring) else "jakarta"
    return Throwable(
        f"{package}.validation.ConstraintViolationException",
        "amount: must be greater than 0",
        (f.app(f"{event_class(lc)}Validator", "check"), *f.calls(_line(f.listener, "validation"))),
    )


def _missing_customer(f: Flavour, lc: Lifecycle) -> Throwable:
    return Throwable(
        "java.lang.IllegalArgumentException",
        f"Order {lc.msg.order_id} has no customer",
        (f.app("CustomerResolver", "resolve"), *f.calls(_line(f.listener, "customer"))),
    )


def _throttle(f: Flavour, lc: Lifecycle) -> Throwable:
    return Throwable(
        f"{f.package}.ratelimit.RateLimitExceededException",
        "rate limit exceeded: 200 permits per second",
        (f.app("ratelimit.Throttle", "acquire"), *f.calls(_line(f.listener, "throttle"))),
    )


_BUILDERS = {  # every cause the scenario may name, and the throttling listener's
    "db-connection-refused": _db_connection_refused,
    "http-connection-refused": lambda f, lc: _http(f, lc, refused=True),
    "http-read-timeout": lambda f, lc: _http(f, lc, refused=False),
    "json": _json,
    "validation": _validation,
    "missing-customer": _missing_customer,
    THROTTLE_CAUSE: _throttle,
}
assert set(_BUILDERS) == {*OUTAGE_CAUSES, *POISON_CAUSES, THROTTLE_CAUSE}
