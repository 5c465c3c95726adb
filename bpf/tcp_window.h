/* Shared between bpf/tcp_window.bpf.c and plugin/tcp_window.c. */
#ifndef TCP_WINDOW_H
#define TCP_WINDOW_H

/* Bytes; the value ebpf_exporter's tcp-window-clamps example uses, so that
 * the reference count compares with its dashboards. */
#define TCP_WINDOW_DEFAULT_THRESHOLD 32768

#endif
