/* SPDX-License-Identifier: MIT */

#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "common/basic/fileio.h"
#include "private-bus.h"
#include "test.h"

pid_t private_bus_start(const char *dir) {
        char conf[256], sock[256], address[300];
        _cleanup_free_ char *text = NULL;
        pid_t pid;

        snprintf(conf, sizeof conf, "%s/bus.conf", dir);
        snprintf(sock, sizeof sock, "%s/bus.socket", dir);
        ASSERT_TRUE(
                asprintf(&text,
                         "<!DOCTYPE busconfig PUBLIC \"-//freedesktop//DTD D-Bus Bus Configuration "
                         "1.0//EN\"\n"
                         " \"http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd\">\n"
                         "<busconfig>\n"
                         "  <type>system</type>\n"
                         "  <listen>unix:path=%s</listen>\n"
                         "  <auth>EXTERNAL</auth>\n"
                         "  <policy context=\"default\">\n"
                         "    <allow user=\"*\"/>\n"
                         "    <allow own=\"*\"/>\n"
                         "    <allow send_destination=\"*\"/>\n"
                         "    <allow receive_sender=\"*\"/>\n"
                         "  </policy>\n"
                         "</busconfig>\n",
                         sock) > 0);
        ASSERT_OK(write_string_file(conf, text));
        pid = fork();
        ASSERT_TRUE(pid >= 0);
        if (pid == 0) {
                (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
                execlp("dbus-daemon", "dbus-daemon", "--nofork", "--nopidfile", "--nosyslog",
                       "--config-file", conf, (char *) NULL);
                _exit(127);
        }
        for (int i = 0; i < 500 && access(sock, F_OK) < 0; i++)
                usleep(10000);
        ASSERT_EQ(access(sock, F_OK), 0);
        snprintf(address, sizeof address, "unix:path=%s", sock);
        ASSERT_EQ(setenv("DBUS_SYSTEM_BUS_ADDRESS", address, 1), 0);
        return pid;
}
