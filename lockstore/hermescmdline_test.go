package lockstore

import (
	"errors"
	"testing"
)

func TestGatewaySubcommand(t *testing.T) {
	tests := []struct {
		line string
		sub  string // "" when not a gateway
	}{
		{"/usr/local/bin/hermes gateway run", "run"},
		{"hermes gateway run --external-supervisor", "run"},
		{"hermes gateway", "run"}, // bare gateway defaults to run
		{"hermes -p work gateway", "run"},
		{"hermes gateway -p work", "run"},
		{"hermes gateway --profile=work", "run"},
		{"hermes -p=work gateway run", "run"},
		{"hermes -p gateway gateway run", "run"}, // the profile named gateway is consumed
		{"hermes -p gateway chat", ""},
		{"hermes --profile work gateway run -v", "run"},
		{"hermes gateway restart", "restart"},
		{"hermes gateway -v", "-v"},
		{"hermes gateway status", "status"},
		{"HERMES GATEWAY RUN", "run"},
		{`C:\Program Files\hermes\hermes.exe gateway run`, "run"},
		{`"C:\Program Files\hermes\hermes.exe" gateway run`, "run"},
		{`"C:\Program Files\hermes\hermes.exe"gateway`, "run"},     // a quoted token ends at its quote
		{`"C:\Program Files\hermes\hermes.exe gateway run`, "run"}, // unclosed quote: whitespace split
		{"/usr/bin/python3 -m hermes_cli.main gateway run", "run"},
		{"python3 /opt/hermes/hermes_cli/main.py gateway run --replace", "run"},
		{"python3 /opt/hermes/gateway/run.py", "run"},
		{"python3 gateway/run.py", "run"},
		{`C:\hermes\gateway\run.py`, "run"},
		{"/usr/bin/hermes-gateway", "run"},
		{`C:\hermes\HERMES-GATEWAY.EXE --verbose`, "run"},
		{"python3 -m gateway.run", ""},
		{"python3 gw.py gateway run", ""},
		{"hermes chat", ""},
		{"/usr/bin/sleep 100", ""},
		{"/usr/bin/hermes-supervisor demo-gateway", ""},
		{"hermesx gateway run", ""},
		{"", ""},
		{"   ", ""},
	}
	for _, tt := range tests {
		sub, ok := GatewaySubcommand(tt.line)
		if ok != (tt.sub != "") || sub != tt.sub {
			t.Errorf("GatewaySubcommand(%q) = %q, %v; want %q", tt.line, sub, ok, tt.sub)
		}
	}
}

func TestGatewayRules(t *testing.T) {
	tests := []struct {
		argv               []string
		run, runtime, ours bool
	}{
		{[]string{"hermes", "gateway"}, true, true, true},
		{[]string{"hermes", "gateway", "run"}, true, true, true},
		{[]string{"hermes", "gateway", "restart"}, false, true, true},
		{[]string{"hermes", "gateway", "stop"}, false, false, false},
		{[]string{"/tmp/x/hermes-supervisor", "demo-gateway"}, false, false, true},
		{nil, false, false, false},
	}
	for _, tt := range tests {
		if IsGatewayRun(tt.argv) != tt.run || IsGatewayRuntime(tt.argv) != tt.runtime || IsGatewayArgv(tt.argv) != tt.ours {
			t.Errorf("%q: run %v runtime %v ours %v, want %v %v %v", tt.argv,
				IsGatewayRun(tt.argv), IsGatewayRuntime(tt.argv), IsGatewayArgv(tt.argv), tt.run, tt.runtime, tt.ours)
		}
	}
}

func TestParseHermesRecord(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		barePID bool
		pid     int // 0: no usable pid
		bad     bool
		empty   bool
		gateway bool
	}{
		{"full", `{"pid": 4242, "kind": "hermes-gateway", "argv": ["hermes", "gateway", "run"], "start_time": 881234}`, true, 4242, false, false, true},
		{"bare gateway argv", `{"pid": 4242, "kind": "hermes-gateway", "argv": ["hermes", "gateway"]}`, true, 4242, false, false, true},
		{"restart argv", `{"pid": 4242, "kind": "hermes-gateway", "argv": ["hermes", "gateway", "restart"]}`, true, 4242, false, false, true},
		{"no kind", `{"pid": 4242, "argv": ["hermes", "gateway", "run"]}`, true, 4242, false, false, false},
		{"string pid", `{"pid": "4242"}`, true, 4242, false, false, false},
		{"float pid", `{"pid": 4242.0}`, true, 4242, false, false, false},
		{"null pid", `{"pid": null}`, true, 0, false, false, false},
		{"word pid", `{"pid": "abc"}`, true, 0, false, false, false},
		{"negative pid", `{"pid": -5}`, true, -5, false, false, false}, // int(-5): a pid Hermes then judges
		{"bare integer, pid file", "4242\n", true, 4242, false, false, false},
		{"bare integer, scoped lock", "4242", false, 0, true, false, false},
		{"BOM", "\ufeff{\"pid\": 7}", false, 7, false, false, false},
		{"BOM bare", "\ufeff 7 ", true, 7, false, false, false},
		{"empty", "", true, 0, true, true, false},
		{"blank", " \n", true, 0, true, true, false},
		{"list", `[1]`, true, 0, true, false, false},
		{"null", `null`, true, 0, true, false, false},
		{"cut short", `{"pid": 4`, true, 0, true, false, false},
		{"not UTF-8", "{\"pid\": 4, \"x\": \"\xff\"}", true, 0, true, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, err := parseHermesRecord([]byte(tt.in), tt.barePID)
			if (err != nil) != tt.bad || errors.Is(err, ErrEmpty) != tt.empty {
				t.Fatalf("err %v, want bad=%v empty=%v", err, tt.bad, tt.empty)
			}
			if tt.bad {
				return
			}
			if h.pidOK != (tt.pid != 0) || h.PID != tt.pid || h.recordLooksLikeGateway() != tt.gateway {
				t.Fatalf("got pid %d (ok %v), gateway %v", h.PID, h.pidOK, h.recordLooksLikeGateway())
			}
		})
	}
	h, _ := parseHermesRecord([]byte(`{"pid": 1, "start_time": "soon"}`), false)
	if !h.startBogus || h.StartTime != nil {
		t.Fatalf("a start time that is no number: %+v", h)
	}
}
