/* SPDX-License-Identifier: MIT */
/*
 * log.h - levelled logging to stderr, journal-friendly.
 *
 * Under systemd, stderr goes to the journal; each line carries an
 * sd-daemon(3) priority prefix ("<3>") so the journal keeps the level.
 * Library-like modules log at debug level only; callers log once.
 */
#pragma once

#include <syslog.h>

#include "util.h"

void log_setup(const char *ident);
void log_set_max_level(int level);
int log_get_max_level(void);
int log_internal(int level, int err, const char *file, int line,
		 const char *func, const char *fmt, ...) _printf_(6, 7);

#define log_full_errno(level, err, ...) \
	log_internal(level, err, __FILE__, __LINE__, __func__, __VA_ARGS__)

#define log_debug(...) log_full_errno(LOG_DEBUG, 0, __VA_ARGS__)
#define log_info(...) log_full_errno(LOG_INFO, 0, __VA_ARGS__)
#define log_notice(...) log_full_errno(LOG_NOTICE, 0, __VA_ARGS__)
#define log_warning(...) log_full_errno(LOG_WARNING, 0, __VA_ARGS__)
#define log_error(...) log_full_errno(LOG_ERR, 0, __VA_ARGS__)

/* Log and return the (negative) errno in one go: return log_error_errno(r, ...). */
#define log_error_errno(err, ...) log_full_errno(LOG_ERR, err, __VA_ARGS__)
#define log_warning_errno(err, ...) \
	log_full_errno(LOG_WARNING, err, __VA_ARGS__)
#define log_debug_errno(err, ...) log_full_errno(LOG_DEBUG, err, __VA_ARGS__)
