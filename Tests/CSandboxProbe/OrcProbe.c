#define _GNU_SOURCE
#include "CSandboxProbe.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CSandbox.h>
#include <orc/orc.h>

#include "ProbeChild.h"

enum { N = 64 };
static int later_backup_ran;

// The second program's C backup: d1 = s1 - s2, saturating (ORC's subusb).
static void subusb_backup(OrcExecutor *ex) {
    later_backup_ran = 1;
    orc_uint8 *d = ex->arrays[ORC_VAR_D1];
    const orc_uint8 *a = ex->arrays[ORC_VAR_S1], *b = ex->arrays[ORC_VAR_S2];
    for (int i = 0; i < ex->n; i++) d[i] = a[i] > b[i] ? (orc_uint8)(a[i] - b[i]) : 0;
}

// The first program's backup must not run (it is compiled before the sandbox); a distinct wrong answer if it does.
static void addusb_backup(OrcExecutor *ex) {
    orc_uint8 *d = ex->arrays[ORC_VAR_D1];
    for (int i = 0; i < ex->n; i++) d[i] = 0xEE;
}

static OrcProgram *program(const char *name, const char *opcode, void (*backup)(OrcExecutor *)) {
    OrcProgram *p = orc_program_new_dss(1, 1, 1);
    orc_program_set_name(p, name);
    orc_program_append_str(p, opcode, "d1", "s1", "s2");
    orc_program_set_backup_function(p, backup);
    return p;
}

static void run(OrcProgram *p, orc_uint8 *d, const orc_uint8 *a, const orc_uint8 *b) {
    OrcExecutor *ex = orc_executor_new(p);
    orc_executor_set_n(ex, N);
    orc_executor_set_array(ex, ORC_VAR_D1, d);
    orc_executor_set_array(ex, ORC_VAR_S1, (void *)a);
    orc_executor_set_array(ex, ORC_VAR_S2, (void *)b);
    orc_executor_run(ex);
    orc_executor_free(ex);
}

// Counts the memory map's lines of concern, and whether `code` lies in a sealed mapping.
static void read_maps(int fd, uintptr_t code, trackd_orc_probe_result *r) {
    static char text[1 << 20];
    ssize_t n, total = 0;
    while ((n = pread(fd, text + total, sizeof text - 1 - (size_t)total, total)) > 0) total += n;
    text[total] = 0;
    for (char *line = strtok(text, "\n"); line != NULL; line = strtok(NULL, "\n")) {
        unsigned long start, end;
        char perms[8] = "";
        if (sscanf(line, "%lx-%lx %7s", &start, &end, perms) != 3) continue;
        int x = perms[2] == 'x';
        if (strstr(line, "/orcexec.") != NULL) r->orc_file_mappings++;
        if (x && (perms[1] == 'w' || perms[3] == 's')) r->writable_executable++;
        if (strstr(line, "memfd:trackd-orc-code") != NULL && strcmp(perms, "r-xp") == 0) {
            r->sealed_mappings++;
            if (code >= start && code < end) r->compiled_code_sealed = 1;
        }
    }
}

static void child(trackd_orc_probe_result *r) {
    orc_init();
    r->code_memory_available = trackd_orc_code_memory_available();
    orc_uint8 a[N], b[N], d[N];
    for (int i = 0; i < N; i++) { a[i] = (orc_uint8)(i * 7); b[i] = (orc_uint8)(200 - i); }
    OrcProgram *first = program("trackd_probe_addusb", "addusb", addusb_backup);
    r->compiled_before = ORC_COMPILE_RESULT_IS_SUCCESSFUL(orc_program_compile(first))
        && first->code_exec != (void *)addusb_backup;
    uintptr_t code = (uintptr_t)first->code_exec;
    int maps = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    trackd_sandbox_config config = { 0 };
    if (maps < 0 || trackd_sandbox_enter(&config, r->error, sizeof r->error) != 0) return;
    r->entered = 1;
    run(first, d, a, b);
    r->compiled_output_right = 1;
    for (int i = 0; i < N; i++) if (d[i] != (a[i] + b[i] > 255 ? 255 : a[i] + b[i])) r->compiled_output_right = 0;
    OrcProgram *later = program("trackd_probe_subusb", "subusb", subusb_backup);
    r->later_compiled = ORC_COMPILE_RESULT_IS_SUCCESSFUL(orc_program_compile(later))
        || later->code_exec != (void *)subusb_backup;
    run(later, d, a, b);
    r->later_ran_backup = later_backup_ran;
    r->later_output_right = 1;
    for (int i = 0; i < N; i++) if (d[i] != (a[i] > b[i] ? a[i] - b[i] : 0)) r->later_output_right = 0;
    read_maps(maps, code, r);
}

static void orc_child(void *result) { child(result); }

int trackd_probe_orc_in_sandbox(trackd_orc_probe_result *result) {
    return trackd_probe_fork(orc_child, result, sizeof *result, &result->signal_number, result->error, sizeof result->error);
}
