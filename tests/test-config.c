// SPDX-License-Identifier: MIT
/*
 * test-config - gemmd's settings: the default config file, --config and
 * the flags over it, the folders systemd names, and the values each key
 * refuses.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
/* gemmd's, not the config.h of ./configure that -I finds first */
#include "../daemon/config.h"

static char dir[PATH_MAX];
static char prog[] = "gemmd";

/* dir/name, made to hold text unless text is NULL. */
static const char *conf(const char *name, const char *text)
{
	static char path[PATH_MAX + 64];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (!text)
		return path;
	f = fopen(path, "w");
	CHECK(f != NULL);
	if (f) {
		fputs(text, f);
		fclose(f);
	}
	return path;
}

/*
 * config_parse_args() on the defaults, with default_file as the config
 * file gemmd looks for, and the flags in argv (NULL-terminated, of static
 * strings: getopt keeps a pointer into the last one between calls).
 */
static int parse(struct config *c, const char *default_file, char **argv)
{
	int argc = 0;

	config_defaults(c);
	snprintf(c->config_file, sizeof(c->config_file), "%s", default_file);
	while (argv[argc])
		argc++;
	return config_parse_args(c, argc, argv);
}

/*
 * The default file is skipped only when it is not there: one that is
 * there and cannot be read stops gemmd, as --config's would, rather than
 * leave it running on other settings than the file's.
 */
static void test_default_file(void)
{
	static char empty_flag[] = "--config=";
	char *none[] = { prog, NULL };
	char *empty[] = { prog, empty_flag, NULL };
	struct config c;
	const char *p;

	CHECK_EQ_INT(parse(&c, conf("missing.conf", NULL), none), 0);
	CHECK_EQ_INT(c.max_kept, 100000);

	p = conf("kept.conf", "max-kept = 7\n");
	CHECK_EQ_INT(parse(&c, p, none), 0);
	CHECK_EQ_INT(c.max_kept, 7);

	/* an unknown key in the default file is an error too */
	p = conf("unknown.conf", "max-keep = 7\n");
	CHECK(parse(&c, p, none) < 0);

	/* a link to nowhere is a file that is not there */
	p = conf("dangling.conf", NULL);
	CHECK_EQ_INT(symlink("nowhere.conf", p), 0);
	CHECK_EQ_INT(parse(&c, p, none), 0);
	unlink(p);

	/* a link loop cannot be read, by root either */
	p = conf("loop.conf", NULL);
	CHECK_EQ_INT(symlink("loop.conf", p), 0);
	CHECK_EQ_INT(parse(&c, p, none), -ELOOP);
	unlink(p);

	/* a file of mode 0 cannot be read, but by root */
	p = conf("private.conf", "max-kept = 7\n");
	CHECK_EQ_INT(chmod(p, 0), 0);
	if (geteuid() != 0)
		CHECK_EQ_INT(parse(&c, p, none), -EACCES);
	unlink(p);

	/* a byte order mark and CRLF line ends, as Windows editors write */
	p = conf("bom.conf", "\xef\xbb\xbfmax-kept = 7\r\n# c\r\n\r\n"
			     "max-queued = 9\r\n");
	CHECK_EQ_INT(parse(&c, p, none), 0);
	CHECK_EQ_INT(c.max_kept, 7);
	CHECK_EQ_INT(c.max_queued, 9);
	/* only at the start of the file */
	p = conf("bom.conf", "max-kept = 7\n\xef\xbb\xbfmax-queued = 9\n");
	CHECK(parse(&c, p, none) < 0);
	unlink(p);

	/* --config with no file is refused as such */
	CHECK_EQ_INT(parse(&c, conf("kept.conf", NULL), empty), -EINVAL);
	unlink(conf("kept.conf", NULL));
	unlink(conf("unknown.conf", NULL));
}

/* The file, then the flags: each overrides the one before. */
static void test_flags_over_file(void)
{
	static char listen_flag[] = "--listen=127.0.0.1:2";
	static char config_flag[PATH_MAX + 64];
	char *argv[] = { prog, config_flag, listen_flag, NULL };
	struct config c;
	const char *p;

	p = conf("listen.conf", "listen = 127.0.0.1:1\nmax-queued = 3\n");
	snprintf(config_flag, sizeof(config_flag), "--config=%s", p);
	CHECK_EQ_INT(parse(&c, conf("missing.conf", NULL), argv), 0);
	CHECK_STREQ(c.listen, "127.0.0.1:2");
	CHECK_EQ_INT(c.max_queued, 3);
	unlink(conf("listen.conf", NULL));
}

/*
 * Under systemd, ConfigurationDirectory= (always /etc/gemmd) holds the
 * config file, whatever sysconfdir the build had, and StateDirectory=
 * the state: the first folder of each list.  A file missing there is
 * skipped as the default one is; --config still wins, and must exist.
 */
static void test_systemd_dirs(void)
{
	static char config_flag[PATH_MAX + 64];
	char *none[] = { prog, NULL };
	char *flag[] = { prog, config_flag, NULL };
	char want[PATH_MAX + 64], list[2 * PATH_MAX];
	struct config c;

	config_defaults(&c);
	CHECK(strstr(c.config_file, "/gemmd/gemmd.conf") != NULL);
	CHECK(strncmp(c.config_file, dir, strlen(dir)) != 0);

	snprintf(list, sizeof(list), "%s:/nowhere/else", dir);
	setenv("CONFIGURATION_DIRECTORY", list, 1);
	setenv("STATE_DIRECTORY", list, 1);
	config_defaults(&c);
	snprintf(want, sizeof(want), "%s/gemmd.conf", dir);
	CHECK_STREQ(c.config_file, want);
	CHECK_STREQ(c.state_dir, dir);

	/* missing: the built-in defaults */
	unlink(want);
	config_defaults(&c);
	CHECK_EQ_INT(config_parse_args(&c, 1, none), 0);
	CHECK_EQ_INT(c.max_kept, 100000);

	conf("gemmd.conf", "max-kept = 7\n");
	config_defaults(&c);
	CHECK_EQ_INT(config_parse_args(&c, 1, none), 0);
	CHECK_EQ_INT(c.max_kept, 7);

	/* --config over it, and one that is not there is an error */
	snprintf(config_flag, sizeof(config_flag), "--config=%s",
		 conf("kept.conf", "max-kept = 8\n"));
	config_defaults(&c);
	CHECK_EQ_INT(config_parse_args(&c, 2, flag), 0);
	CHECK_EQ_INT(c.max_kept, 8);
	unlink(conf("kept.conf", NULL));
	config_defaults(&c);
	CHECK_EQ_INT(config_parse_args(&c, 2, flag), -ENOENT);
	unlink(want);

	/* empty, as unset */
	setenv("CONFIGURATION_DIRECTORY", "", 1);
	setenv("STATE_DIRECTORY", "", 1);
	config_defaults(&c);
	CHECK(strncmp(c.config_file, dir, strlen(dir)) != 0);
	CHECK(strncmp(c.state_dir, dir, strlen(dir)) != 0);
	unsetenv("CONFIGURATION_DIRECTORY");
	unsetenv("STATE_DIRECTORY");
}

/* "key = value" as the whole file: what config_load_file() makes of it. */
static char err[512];

static int load(struct config *c, const char *key, const char *value)
{
	char text[256];
	int r;

	snprintf(text, sizeof(text), "%s = %s\n", key, value);
	config_defaults(c);
	r = config_load_file(c, conf("one.conf", text), err, sizeof(err));
	unlink(conf("one.conf", NULL));
	/* a refusal names the file, the line and the key */
	if (r < 0 && (!strstr(err, "one.conf:1: ") || !strstr(err, key))) {
		fprintf(stderr, "  %s = %s: \"%s\"\n", key, value, err);
		CHECK(0);
	}
	return r;
}

/* The keys that take a whole number. */
static const char *const number_keys[] = {
	"max-queued",	      "max-kept",	 "max-body",
	"max-wait",	      "max-connections", "per-ip-connections",
	"connection-timeout", "job-timeout-max", "worker-start-timeout",
	"worker-retry",
};

/*
 * Whole numbers in range only, and 0 only where it means something:
 * max-kept (keep no ended job), max-wait (hold no request),
 * worker-retry (never), per-ip-connections (no limit) and
 * connection-timeout (never closed), as etc/gemmd.conf says, take it; a
 * limit that 0 would turn into refusing every connection, job or body
 * does not.
 */
static void test_numbers(void)
{
	static const char *const bad[] = {
		"",    "-1",  "+1",
		" 1x", "1 2", "0x10",
		"1e3", "1.5", "99999999999999999999"
	};
	static const char *const no_zero[] = { "max-queued", "max-body",
					       "max-connections",
					       "job-timeout-max",
					       "worker-start-timeout" };
	struct config c;
	size_t i, j;

	for (i = 0; i < sizeof(number_keys) / sizeof(number_keys[0]); i++) {
		CHECK_EQ_INT(load(&c, number_keys[i], "1"), 0);
		for (j = 0; j < sizeof(bad) / sizeof(bad[0]); j++)
			CHECK_EQ_INT(load(&c, number_keys[i], bad[j]), -EINVAL);
	}
	for (i = 0; i < sizeof(no_zero) / sizeof(no_zero[0]); i++)
		CHECK_EQ_INT(load(&c, no_zero[i], "0"), -EINVAL);
	CHECK_EQ_INT(load(&c, "max-kept", "0"), 0);
	CHECK_EQ_INT(c.max_kept, 0);
	CHECK_EQ_INT(load(&c, "max-wait", "0"), 0);
	CHECK_EQ_INT(load(&c, "worker-retry", "0"), 0);
	CHECK_EQ_INT(load(&c, "per-ip-connections", "0"), 0);
	CHECK_EQ_INT(c.per_ip_connections, 0);
	CHECK_EQ_INT(load(&c, "connection-timeout", "0"), 0);
	CHECK_EQ_INT(c.connection_timeout, 0);
	/* past a day, libmicrohttpd's milliseconds wrapped round to 0.8 s */
	CHECK_EQ_INT(load(&c, "connection-timeout", "86400"), 0);
	CHECK_EQ_INT(c.connection_timeout, 86400);
	CHECK_EQ_INT(load(&c, "connection-timeout", "4294968"), -EINVAL);
	CHECK_EQ_INT(load(&c, "max-wait", "3601"), -EINVAL);
	CHECK_EQ_INT(load(&c, "job-timeout-max", "86401"), -EINVAL);
	CHECK_EQ_INT(load(&c, "max-queued", "5"), 0);
	CHECK_EQ_INT(c.max_queued, 5);
	CHECK_EQ_INT(load(&c, "max-body", "5"), 0);
	CHECK_EQ_INT(c.max_body, 5);
}

/* value as a decimal string, in buf */
static const char *num(char *buf, size_t len, unsigned long v)
{
	snprintf(buf, len, "%lu", v);
	return buf;
}

/*
 * A refused value is quoted with what the key takes, and the range the
 * message gives is the one taken: both ends in, one past each out.  A '#'
 * after a value is pointed at: it is read as part of the value.
 */
static void test_messages(void)
{
	struct config c;
	unsigned long lo, hi;
	char buf[32];
	const char *range;
	size_t i;

	for (i = 0; i < sizeof(number_keys) / sizeof(number_keys[0]); i++) {
		CHECK_EQ_INT(load(&c, number_keys[i], "x"), -EINVAL);
		CHECK(strstr(err, "\"x\"; expected ") != NULL);
		range = strrchr(err, ' ');
		if (!range || sscanf(range, " %lu..%lu", &lo, &hi) != 2) {
			fprintf(stderr, "  %s: no range in \"%s\"\n",
				number_keys[i], err);
			CHECK(0);
			continue;
		}
		CHECK_EQ_INT(
			load(&c, number_keys[i], num(buf, sizeof(buf), lo)), 0);
		CHECK_EQ_INT(
			load(&c, number_keys[i], num(buf, sizeof(buf), hi)), 0);
		CHECK_EQ_INT(load(&c, number_keys[i],
				  num(buf, sizeof(buf), hi + 1)),
			     -EINVAL);
		if (lo)
			CHECK_EQ_INT(load(&c, number_keys[i],
					  num(buf, sizeof(buf), lo - 1)),
				     -EINVAL);
	}
	CHECK_EQ_INT(load(&c, "listen", "127.0.0.1:80 # web"), -EINVAL);
	CHECK(strstr(err, "\"127.0.0.1:80 # web\"; expected HOST:PORT") !=
	      NULL);
	CHECK(strstr(err, "a comment takes a line of its own") != NULL);
}

/*
 * A HOST that is neither an address nor a name is refused with the file
 * and line, not left to fail to resolve at the bind after the probe.
 */
static void test_listen(void)
{
	static const char *const good[] = {
		"127.0.0.1:0", "0.0.0.0:8090", "*:8090",
		"[::1]:0",     "::1:0",	       "[::]:8090",
		"localhost:0", "127.1:0",      "gpu-7.example.com:80",
		"node_3:80",
	};
	static const char *const bad[] = {
		"[::1:0",   "::1]:0",  "256.1.1.1:80",	"1.2.3.4.5:80",
		"a:b:80",   "[]:80",   "host name:80",	"-host:80",
		".host:80", "h/st:80", "127.0.0.1 :80",
	};
	struct config c;
	size_t i;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		if (load(&c, "listen", good[i]) != 0) {
			fprintf(stderr, "  refused listen = %s\n", good[i]);
			CHECK(0);
		}
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (load(&c, "listen", bad[i]) != -EINVAL) {
			fprintf(stderr, "  took listen = %s\n", bad[i]);
			CHECK(0);
		}
	}
	CHECK(strstr(err, "expected HOST:PORT") != NULL);
}

int main(void)
{
	check_tmp_path(dir, sizeof(dir), "gemmd-config-XXXXXX");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return EXIT_FAILURE;
	}
	RUN_TEST(test_default_file);
	RUN_TEST(test_flags_over_file);
	RUN_TEST(test_systemd_dirs);
	RUN_TEST(test_numbers);
	RUN_TEST(test_messages);
	RUN_TEST(test_listen);
	rmdir(dir);
	return check_exit();
}
