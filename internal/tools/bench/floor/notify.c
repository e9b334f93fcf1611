/*
 * notify.c is the floor of hang detection through sd_notify, for the
 * bench's idle cost with the watchdog on (internal/tools/bench/notifyfloor.go):
 * the least a receiver of Hermes' keep-alives can do and still detect a
 * hang. It binds a datagram socket at SOCKET that reports each sender's
 * credentials, and on each datagram wakes once from epoll, reads it with
 * recvmsg and moves a timerfd deadline USEC ahead. It judges nothing: no
 * parsing, no check of the sender. It prints "listening" once bound and
 * "ready" after the first datagram, and exits 3 when the deadline passes.
 *
 * The bench compiles it with the host's C compiler; Go cannot be the floor,
 * since its runtime adds the wake-ups a floor must not have.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <unistd.h>

int main(int argc, char **argv) {
	if (argc != 3) {
		fprintf(stderr, "usage: notifyfloor SOCKET USEC\n");
		return 2;
	}
	long usec = atol(argv[2]);
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	if (usec <= 0 || strlen(argv[1]) >= sizeof addr.sun_path) {
		fprintf(stderr, "notifyfloor: bad SOCKET or USEC\n");
		return 2;
	}
	strcpy(addr.sun_path, argv[1]);
	int one = 1;
	int sock = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	int timer = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	int ep = epoll_create1(EPOLL_CLOEXEC);
	if (sock < 0 || timer < 0 || ep < 0 ||
	    bind(sock, (struct sockaddr *)&addr, sizeof addr) < 0 ||
	    setsockopt(sock, SOL_SOCKET, SO_PASSCRED, &one, sizeof one) < 0) {
		perror("notifyfloor");
		return 1;
	}
	struct epoll_event ev = {.events = EPOLLIN, .data.fd = sock};
	epoll_ctl(ep, EPOLL_CTL_ADD, sock, &ev);
	ev.data.fd = timer;
	epoll_ctl(ep, EPOLL_CTL_ADD, timer, &ev);
	printf("listening\n");
	fflush(stdout);
	struct itimerspec deadline = {.it_value = {usec / 1000000, (usec % 1000000) * 1000}};
	char buf[4096], cbuf[CMSG_SPACE(sizeof(struct ucred))];
	int seen = 0;
	for (;;) {
		struct epoll_event got;
		if (epoll_wait(ep, &got, 1, -1) != 1)
			continue;
		if (got.data.fd == timer) {
			fprintf(stderr, "notifyfloor: no keep-alive for %ld us\n", usec);
			return 3;
		}
		struct iovec iov = {buf, sizeof buf};
		struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof cbuf};
		if (recvmsg(sock, &msg, MSG_DONTWAIT) < 0)
			continue;
		timerfd_settime(timer, 0, &deadline, NULL);
		if (!seen) {
			seen = 1;
			printf("ready\n");
			fflush(stdout);
		}
	}
}
