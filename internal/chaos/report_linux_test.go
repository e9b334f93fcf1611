package chaos

const reportHead = `# Reliability

What ` + "`make chaos`" + ` (` + "`internal/chaos`" + `) did to real supervisors and gateways, and how many
times the promise held: the gateway comes back, nothing foreign is signalled, no file of a live
gateway is deleted, and every refusal is one clear line. ` + "`make test`" + ` runs the same scenarios
with small counts on every change. Each row is one scenario; "survived" counts the tries after which
every check held (a single failure fails the run, so a published report has tried = survived).

`

const reportTail = `
Scenario 8, fuzzing, is not counted here: ` + "`make test`" + ` fuzzes every parser of what the supervisor
reads for a few seconds each, ` + "`make fuzz`" + ` for two minutes each, keeping the inputs it found under
each package's ` + "`testdata/fuzz`" + `: ` + "`FuzzParseRecord`, `FuzzParseState`, `FuzzParseMarker`" + ` (lockstore),
` + "`FuzzParseStat`" + ` (procstate), ` + "`FuzzParseStatusFile`, `FuzzParseFileConfig`, `FuzzControlRequest`" + ` (supervisor).

## Bugs this suite found, and the test that now holds each

| bug | fix | held by |
|---|---|---|
| A supervisor killed after it started a gateway and before its state file named it left a gateway nobody knew: the next supervisor waited on it forever as "foreign", or started a second gateway that raced it for the home. | Every gateway carries ` + "`HERMES_SUPERVISOR=<pid>:<start time>`" + `; at start-up the supervisor stops any process of its home whose supervisor is dead. | ` + "`TestSupervisorSIGKILL`" + `, ` + "`stray_gateway.txtar`" + ` |
| Helpers of a gateway outlived it when a killed supervisor's gateway died as a zombie that pid 1 did not reap (containers, this VM): the group kill waited for a reap that never came. | The zombie's group is killed at once: while the zombie exists its group id cannot be anyone else's. | ` + "`TestSupervisorSIGKILL`" + ` |
| A lock dir the supervisor may not write made it start the gateway anyway, which failed, forever, with backoff. | ` + "`run`" + ` probes the home and lock dir (list, create, remove) and refuses with one line. | ` + "`TestPowerLoss`" + ` (lock dir without permission, read-only) |
| A home that is a file, or may not be searched, was reported as an unreadable config file. | The implicit config file is skipped when the home itself is unusable, so the home is named. | ` + "`TestPowerLoss`" + ` (home is a file, home without permission) |
| During a flood of clients ` + "`status`" + ` failed (broken pipe, or "too many clients"). | Clients read the busy answer even after a broken write and retry; ` + "`status`" + ` falls back to the state file. | ` + "`TestControlEndpoint`" + `, ` + "`FuzzControlRequest`" + ` |
| A supervisor that lost the race for a home named the winner "another process" when the winner had not yet written its pid. | The loser waits up to a second for the pid. | ` + "`TestSupervisorsRace`" + ` |
| A supervisor whose stderr was a pipe died of SIGPIPE when the reader went away (` + "`run 2>&1 \\| logger`" + ` losing its logger), leaving its gateway unsupervised. | ` + "`run`" + ` ignores SIGPIPE; lost log lines are the only cost. | ` + "`TestLogReaderGone`" + ` |
| Earlier: a supervisor killed with SIGKILL left its gateway's helpers running after the next supervisor stopped that gateway. | Kill the orphan's process group once its leader is gone. | ` + "`supervisor_sigkill.txtar`" + ` |
`
