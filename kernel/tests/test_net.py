import socket

from agent_env.net import free_port


def test_free_port_can_be_bound():
    port = free_port()
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))


def test_free_port_never_hands_out_a_port_twice_even_from_threads_at_once():
    """Two `bind(0)`s may get the same port once the first socket closed: envs deployed at
    once were told the same port (issue 31). Within one process that cannot happen now."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(16) as pool:
        ports = list(pool.map(lambda _: free_port(), range(2000)))
    assert len(set(ports)) == len(ports)
