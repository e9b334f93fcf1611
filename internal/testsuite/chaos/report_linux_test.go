package chaos

const reportHead = `# Reliability

What ` + "`make chaos`" + ` (` + "`internal/testsuite/chaos`" + `) did to real supervisors and gateways, and how many
times the promise held: the gateway comes back, nothing foreign is signalled, no file of a live
gateway is deleted, and every refusal is one clear line. ` + "`make test`" + ` runs the same scenarios
with small counts on every change. Each row is one scenario; "survived" counts the tries after which
every check held (a single failure fails the run, so a published report has tried = survived).

`

const reportTail = `
Scenario 8, fuzzing, is not counted here: ` + "`make test`" + ` fuzzes every parser of what the supervisor
reads for a few seconds each, ` + "`make fuzz`" + ` for two minutes each, keeping the inputs it found under
each package's ` + "`testdata/fuzz`" + `: ` + "`FuzzParseRecord`, `FuzzParseState`, `FuzzParseMarker`" + ` (lockstore),
` + "`FuzzParseStat`" + ` (procstate), ` + "`FuzzParseStatusFile`, `FuzzControlRequest`, `FuzzParseNotify`" + ` (supervisor),
` + "`FuzzParseFileConfig`" + ` (cmd/hermes-supervisor).

## Bugs this suite found, and the test that now holds each

| bug | fix | held by |
|---|---|---|
| A supervisor killed after it started a gateway and before its state file named it left a gateway nobody knew: the next supervisor waited on it forever as "foreign", or started a second gateway that raced it for the home. | Every gateway carries the per-run nonce ` + "`HERMES_SUPERVISOR_NONCE`" + ` in its environment, whose hash the state file keeps (written before the gateway starts); at start-up the supervisor stops the gateway of its home that carries it. | ` + "`TestSupervisorSIGKILL`" + `, ` + "`supervisor_sigkill.txtar`" + ` |
| Helpers of a gateway outlived it when a killed supervisor's gateway died as a zombie that pid 1 did not reap (containers, this VM): the group kill waited for a reap that never came. | Once the gateway is gone, the processes left in its group that carry its nonce are killed one by one, each proven again. | ` + "`TestSupervisorSIGKILL`" + ` |
| A lock dir the supervisor may not write made it start the gateway anyway, which failed, forever, with backoff. | ` + "`run`" + ` probes the home and lock dir (list, create, remove) and refuses with one line. | ` + "`TestPowerLoss`" + ` (lock dir without permission, read-only) |
| A home that is a file, or may not be searched, was reported as an unreadable config file. | The implicit config file is skipped when the home itself is unusable, so the home is named. | ` + "`TestPowerLoss`" + ` (home is a file, home without permission) |
| During a flood of clients ` + "`status`" + ` failed (broken pipe, or "too many clients"). | Clients read the busy answer even after a broken write and retry; ` + "`status`" + ` falls back to the state file. | ` + "`TestControlEndpoint`" + `, ` + "`FuzzControlRequest`" + ` |
| A supervisor that lost the race for a home named the winner "another process" when the winner had not yet written its pid. | The loser waits up to a second for the pid. | ` + "`TestSupervisorsRace`" + ` |
| A supervisor whose stderr was a pipe died of SIGPIPE when the reader went away (` + "`run 2>&1 \\| logger`" + ` losing its logger), leaving its gateway unsupervised. | ` + "`run`" + ` ignores SIGPIPE; lost log lines are the only cost. | ` + "`TestLogReaderGone`" + ` |
| Earlier: a supervisor killed with SIGKILL left its gateway's helpers running after the next supervisor stopped that gateway. | Kill the helpers left in the orphan's group, each proven by its nonce (never the group by number: see the pid-reuse row). | ` + "`supervisor_sigkill.txtar`" + ` |
| Review (issue 13): a forged or stale state file naming any live process, pid and argv copied from /proc, made start-up SIGTERM it and kill its group; naming pid 1 became ` + "`kill(-1, SIGKILL)`" + `, and the supervisor then ignored ` + "`stop`" + `. | A predecessor's gateway is touched only with its nonce in its own environment, this home, a state file of this boot, and exactly the recorded start time and argv; never pid ≤ 1 or itself; an unprovable adopted gateway is abandoned, not waited on forever. | ` + "`TestHostile`" + `, ` + "`TestForgedStateSignalsNothing`" + `, ` + "`TestKillGroupRefusesInitAndSelf`" + ` |
| Review: a gateway's pid reused by an unrelated process that made itself a group leader, forked and exited: the next supervisor killed that orphaned group by number. A state file of another boot did the same. | No group is killed once its leader is gone; state files carry the boot id. | ` + "`TestHostile`" + `, ` + "`TestLeaderGoneGroupSurvives`" + ` |
| Review: any process started with ` + "`HERMES_HOME=<home> HERMES_SUPERVISOR=<dead pid>:<any>`" + ` (anything the agent set off with setsid) was killed at start-up. | The tag proves nothing; the nonce does, and a nonce carrier outside a gateway's group is left alone. | ` + "`TestHostile`" + `, ` + "`TestReclaimNeedsTheNonce`" + `, ` + "`stray_gateway.txtar`" + ` |
| Review: a FIFO state file hung start-up, ` + "`status`" + ` and ` + "`stop`" + `; a link to /dev/zero or a 2 GiB state file ate memory; a FIFO config hung ` + "`status`" + `; a linked ` + "`hermes-supervisor.lock`" + ` let a root supervisor rewrite a root-only file. | ` + "`safefs.ReadRegularFile`" + ` and ` + "`OpenLockFile`" + `: no links followed, no blocking, regular files only, bounded. | ` + "`TestHostile`" + `, ` + "`TestHostileReadsAreRefused`" + `, ` + "`TestOpenLockFileNeverFollowsALink`" + ` |
| Review: another user bound the temp-dir socket first, blocked start-up and answered ` + "`status`" + ` with a fake "running". | No socket in a shared temp dir ($XDG_RUNTIME_DIR or a checked 0700 per-user dir); peer uid checked on both sides. | ` + "`TestHostile`" + `, ` + "`TestSquattedSocket`" + ` |
| Review: a read-only or full home drove the supervisor to ` + "`failed`" + `, where it stayed after the disk recovered. | Start-up failures are retried, never counted as crashes, and shown in ` + "`status`" + `. | ` + "`TestHostile`" + `, ` + "`TestDeletedHomeIsNotACrash`" + ` |
`
