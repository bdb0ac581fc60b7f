/* Every Criterion suite's main (linked through TEST_LDADD and
 * INTERNAL_TEST_LDADD, Makefile.am): Criterion's own default main, except
 * that a run in which no test ran, or every test skipped (no accelerator,
 * no OpenCL driver), exits 77, which Automake's test driver reports as
 * SKIP rather than PASS. A failure still exits 1. */
#include <criterion/criterion.h>
#include <criterion/hooks.h>

#include <stdbool.h>

/* Set by the POST_ALL report, which runs in this (the runner) process
 * after every test; a run that printed its usage (--help, --list) has
 * none, and keeps Criterion's exit status. */
static bool reported, nothing_ran;

ReportHook(POST_ALL)(struct criterion_global_stats *stats)
{
    reported = true;
    nothing_ran = stats->tests_skipped == stats->nb_tests;
}

int main(int argc, char *argv[])
{
    struct criterion_test_set *tests = criterion_initialize();
    int result = 0;
    if (criterion_handle_args(argc, argv, true))
        result = !criterion_run_all_tests(tests);
    criterion_finalize(tests);
    if (result == 0 && reported && nothing_ran)
        return 77;
    return result;
}
